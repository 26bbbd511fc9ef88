package shard

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/buraksezer/consistent"
	"github.com/cespare/xxhash/v2"
)

// Ring maps keys to node names by consistent hashing with bounded loads.
//
// A Ring is safe for concurrent use. Locate, LocateBytes, Members, Len and
// Config never block: they read an immutable snapshot through an atomic
// pointer. Add, Remove and Set build the next snapshot aside and swap it in;
// they are serialized among themselves and never make a reader wait. A
// reader sees the membership either before or after a change, never a mix.
//
// The zero Ring is an empty ring with the default Config. A Ring must not be
// copied after first use.
type Ring struct {
	cfg  Config     // as given to New; zero fields mean defaults
	mu   sync.Mutex // serializes Add, Remove and Set; never held by readers
	snap atomic.Pointer[snapshot]
}

// snapshot is one immutable membership. Nothing in it changes once it is
// published.
type snapshot struct {
	// names are the members, sorted and unique.
	names []string
	// owner[p] is the index in names of the member that owns partition p.
	// It is c's partition table flattened, so that Locate is one hash, one
	// modulo and two slice loads: no lock (consistent takes an RWMutex in
	// GetPartitionOwner) and no allocation (consistent's Hasher interface
	// makes the key escape). Empty when names is.
	owner []int32
	// c is the ring owner was read from and checked against; nil when empty.
	c *consistent.Consistent
}

var emptySnapshot = &snapshot{}

// New returns a Ring over the given node names with cfg (zero fields mean
// their defaults). The names may come in any order: the routing depends only
// on the set of names and cfg. With no names the ring is empty, and Locate
// reports ok == false until a node is added.
func New(cfg Config, names ...string) (*Ring, error) {
	if err := cfg.withDefaults().validate(); err != nil {
		return nil, err
	}
	sorted, err := sortedNames(names)
	if err != nil {
		return nil, err
	}
	r := &Ring{cfg: cfg}
	s, err := build(r.Config(), sorted)
	if err != nil {
		return nil, err
	}
	r.snap.Store(s)
	return r, nil
}

// Config returns the Ring's configuration with defaults filled in.
func (r *Ring) Config() Config {
	return r.cfg.withDefaults()
}

// load returns the current snapshot, never nil.
func (r *Ring) load() *snapshot {
	if s := r.snap.Load(); s != nil {
		return s
	}
	return emptySnapshot
}

// Locate returns the name of the node that owns key. ok is false, and name
// empty, when the ring has no members. Every process with the same Config
// and the same set of names returns the same name for the same key.
func (r *Ring) Locate(key string) (name string, ok bool) {
	s := r.snap.Load()
	if s == nil || len(s.owner) == 0 {
		return "", false
	}
	return s.names[s.owner[xxhash.Sum64String(key)%uint64(len(s.owner))]], true
}

// LocateBytes is Locate for a key held in a byte slice; it returns the same
// node as Locate(string(key)), without converting.
func (r *Ring) LocateBytes(key []byte) (name string, ok bool) {
	s := r.snap.Load()
	if s == nil || len(s.owner) == 0 {
		return "", false
	}
	return s.names[s.owner[xxhash.Sum64(key)%uint64(len(s.owner))]], true
}

// Members returns the names of the members in sorted order, in a new slice
// the caller may keep. It is empty when the ring is.
func (r *Ring) Members() []string {
	return slices.Clone(r.load().names)
}

// Len returns the number of members.
func (r *Ring) Len() int {
	return len(r.load().names)
}

// Add adds the node name. It fails with [ErrInvalidName] when name is empty,
// longer than [MaxNameLen] bytes or already a member, and with [ErrRing]
// when the ring cannot be built with the new member (for example when there
// would be more members than partitions). On failure the ring is unchanged.
func (r *Ring) Add(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := r.load()
	i, found := slices.BinarySearch(cur.names, name)
	if found {
		return fmt.Errorf("%w: %q is already a member", ErrInvalidName, name)
	}
	names := make([]string, 0, len(cur.names)+1)
	names = append(names, cur.names[:i]...)
	names = append(names, name)
	names = append(names, cur.names[i:]...)
	return r.swap(names)
}

// Remove removes the node name. It fails with [ErrUnknownNode] when name is
// not a member, and with [ErrRing] when the ring cannot be built without it.
// On failure the ring is unchanged. Removing the last member leaves an empty
// ring.
func (r *Ring) Remove(name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := r.load()
	i, found := slices.BinarySearch(cur.names, name)
	if !found {
		if len(name) > MaxNameLen {
			return fmt.Errorf("%w: name of %d bytes", ErrUnknownNode, len(name))
		}
		return fmt.Errorf("%w: %q", ErrUnknownNode, name)
	}
	names := make([]string, 0, len(cur.names)-1)
	names = append(names, cur.names[:i]...)
	names = append(names, cur.names[i+1:]...)
	return r.swap(names)
}

// Set replaces the membership with names, in any order; with no names the
// ring becomes empty. It fails with [ErrInvalidName] when a name is invalid
// or given twice, and with [ErrRing] when the ring cannot be built. On
// failure the ring is unchanged. Keys whose owner is in both memberships
// mostly stay where they were, as with Add and Remove.
func (r *Ring) Set(names ...string) error {
	sorted, err := sortedNames(names)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if slices.Equal(sorted, r.load().names) {
		return nil
	}
	return r.swap(sorted)
}

// swap builds the ring for names (sorted, unique, valid) and publishes it.
// The caller holds r.mu.
func (r *Ring) swap(names []string) error {
	s, err := build(r.Config(), names)
	if err != nil {
		return err
	}
	r.snap.Store(s)
	return nil
}

// checkName reports whether name may be a node name.
func checkName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty name", ErrInvalidName)
	case len(name) > MaxNameLen:
		return fmt.Errorf("%w: name of %d bytes is longer than %d", ErrInvalidName, len(name), MaxNameLen)
	}
	return nil
}

// sortedNames returns a sorted copy of names after checking that each is
// valid and none is repeated.
func sortedNames(names []string) ([]string, error) {
	for _, n := range names {
		if err := checkName(n); err != nil {
			return nil, err
		}
	}
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	for i := 1; i < len(sorted); i++ {
		if sorted[i] == sorted[i-1] {
			return nil, fmt.Errorf("%w: %q given twice", ErrInvalidName, sorted[i])
		}
	}
	return sorted, nil
}

// build returns the snapshot for names, which must be sorted, unique and
// valid. The ring is built from scratch in the order of names, so that the
// same set of names gives the same routing in every process however it was
// reached. Any panic in consistent is returned as an error wrapping ErrRing,
// and so is a ring that does not give every partition to one of names.
func build(cfg Config, names []string) (s *snapshot, err error) {
	if len(names) == 0 {
		return emptySnapshot, nil
	}
	defer func() {
		if v := recover(); v != nil {
			s, err = nil, fmt.Errorf("%w: %d members, %d partitions, load %v: consistent panicked: %v",
				ErrRing, len(names), cfg.PartitionCount, cfg.Load, v)
		}
	}()
	members := make([]consistent.Member, len(names))
	for i, n := range names {
		members[i] = memberOf(n)
	}
	c := newConsistent(cfg, members)
	owner, err := ownerTable(c, names, cfg.PartitionCount)
	if err != nil {
		return nil, err
	}
	return &snapshot{names: names, owner: owner, c: c}, nil
}

// newConsistent builds a consistent ring of members, in the order given.
func newConsistent(cfg Config, members []consistent.Member) *consistent.Consistent {
	return consistent.New(members, consistent.Config{
		Hasher:            hasher{},
		PartitionCount:    cfg.PartitionCount,
		ReplicationFactor: cfg.ReplicationFactor,
		Load:              cfg.Load,
	})
}

// ownerTable checks that c holds exactly names and gives each of its
// partitions to one of them, and returns its partition table as indexes into
// names.
func ownerTable(c *consistent.Consistent, names []string, partitions int) ([]int32, error) {
	got := c.GetMembers()
	if len(got) != len(names) {
		return nil, fmt.Errorf("%w: ring has %d members, want %d", ErrRing, len(got), len(names))
	}
	for _, m := range got {
		if _, err := indexOf(m, names); err != nil {
			return nil, err
		}
	}
	owner := make([]int32, partitions)
	var total float64
	for _, load := range c.LoadDistribution() {
		total += load
	}
	if int(total) != partitions {
		return nil, fmt.Errorf("%w: %v of %d partitions have an owner", ErrRing, total, partitions)
	}
	for p := range owner {
		m := c.GetPartitionOwner(p)
		if m == nil {
			return nil, fmt.Errorf("%w: partition %d has no owner", ErrRing, p)
		}
		i, err := indexOf(m, names)
		if err != nil {
			return nil, fmt.Errorf("partition %d: %w", p, err)
		}
		owner[p] = int32(i)
	}
	return owner, nil
}

// indexOf returns the index in names of the member m.
func indexOf(m consistent.Member, names []string) (int, error) {
	mm, ok := m.(member)
	if !ok {
		return 0, fmt.Errorf("%w: member of type %T", ErrRing, m)
	}
	i, found := slices.BinarySearch(names, mm.name())
	if !found {
		return 0, fmt.Errorf("%w: %q is not a member", ErrRing, mm.name())
	}
	return i, nil
}

// memberSep ends a member's String. consistent names the virtual nodes of a
// member fmt.Sprintf("%s%d", member.String(), i), i in [0,
// ReplicationFactor): with raw names, replica 12 of "node1" and replica 2 of
// "node11" are both "node112", and the later member silently takes the
// earlier one's point. With the separator, a virtual node's name is
// name+"#"+digits; digits hold no '#', so its last '#' tells where the name
// ends, and no two (name, replica) pairs share a virtual node.
const memberSep = "#"

// member is a node as consistent sees it: its name followed by memberSep.
type member string

func memberOf(name string) member { return member(name + memberSep) }

// String returns the encoded name that consistent hashes.
func (m member) String() string { return string(m) }

func (m member) name() string { return string(m[:len(m)-len(memberSep)]) }

// hasher is the consistent.Hasher of every ring: xxhash64.
type hasher struct{}

func (hasher) Sum64(b []byte) uint64 { return xxhash.Sum64(b) }
