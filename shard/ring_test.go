package shard

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/buraksezer/consistent"
)

const numKeys = 100_000

// testKeys returns n distinct keys shaped like rate-limit keys.
func testKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("user:%d", i)
	}
	return keys
}

// mustNew is New that fails the test on error.
func mustNew(t testing.TB, cfg Config, names ...string) *Ring {
	t.Helper()
	r, err := New(cfg, names...)
	if err != nil {
		t.Fatalf("New(%+v, %q) = %v", cfg, names, err)
	}
	return r
}

// routes returns the owner of every key.
func routes(t testing.TB, r *Ring, keys []string) []string {
	t.Helper()
	out := make([]string, len(keys))
	for i, k := range keys {
		name, ok := r.Locate(k)
		if !ok {
			t.Fatalf("Locate(%q) = _, false on a ring of %d members", k, r.Len())
		}
		out[i] = name
	}
	return out
}

// countDiff returns how many positions of a and b differ.
func countDiff(a, b []string) int {
	n := 0
	for i := range a {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

func TestNewValidatesConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"zero means defaults", Config{}, true},
		{"one partition", Config{PartitionCount: 1}, true},
		{"max partitions", Config{PartitionCount: maxPartitionCount}, true},
		{"negative partitions", Config{PartitionCount: -1}, false},
		{"too many partitions", Config{PartitionCount: maxPartitionCount + 1}, false},
		{"two replicas", Config{ReplicationFactor: 2}, true},
		{"one replica", Config{ReplicationFactor: 1}, false},
		{"negative replicas", Config{ReplicationFactor: -3}, false},
		{"too many replicas", Config{ReplicationFactor: maxReplicationFactor + 1}, false},
		{"load 1", Config{Load: 1}, true},
		{"load below 1", Config{Load: 0.99}, false},
		{"negative load", Config{Load: -1.25}, false},
		{"NaN load", Config{Load: math.NaN()}, false},
		{"infinite load", Config{Load: math.Inf(1)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := New(tt.cfg)
			if tt.ok {
				if err != nil {
					t.Fatalf("New(%+v) = %v, want nil", tt.cfg, err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidConfig) || r != nil {
				t.Fatalf("New(%+v) = %v, %v, want nil, ErrInvalidConfig", tt.cfg, r, err)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	got := mustNew(t, Config{}).Config()
	want := Config{PartitionCount: 7919, ReplicationFactor: 200, Load: 1.25}
	if got != want {
		t.Fatalf("Config() = %+v, want %+v", got, want)
	}
	var zero Ring
	if got := zero.Config(); got != want {
		t.Fatalf("zero Ring Config() = %+v, want %+v", got, want)
	}
	custom := Config{PartitionCount: 271, ReplicationFactor: 20, Load: 1.5}
	if got := mustNew(t, custom).Config(); got != custom {
		t.Fatalf("Config() = %+v, want %+v", got, custom)
	}
}

func TestNewRejectsInvalidNames(t *testing.T) {
	tests := []struct {
		name  string
		names []string
		want  error
	}{
		{"empty", []string{"a", ""}, ErrInvalidName},
		{"duplicate", []string{"a", "b", "a"}, ErrInvalidName},
		{"too long", []string{strings.Repeat("x", MaxNameLen+1)}, ErrInvalidName},
		{"longest", []string{strings.Repeat("x", MaxNameLen)}, nil},
		{"any bytes", []string{"\x00", "#", "a#1", "a#", "ü", "\xff"}, nil},
		{"none", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(Config{}, tt.names...)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("New(%q) = %v, want %v", tt.names, err, tt.want)
			}
		})
	}
}

// TestNamesEndingInDigitsDoNotCollide is the regression test for
// consistent's naming of virtual nodes, fmt.Sprintf("%s%d", member, i):
// with raw names, replica 12 of "node1" and replica 2 of "node11" are both
// "node112". The colliding point goes to whichever member consistent added
// last, so the routing depended on the order the members were added in (and
// consistent's own Remove then dereferenced a nil member).
func TestNamesEndingInDigitsDoNotCollide(t *testing.T) {
	names := []string{"node1", "node11", "node111", "node2", "node21", "node12"}
	cfg := Config{}.withDefaults()

	t.Run("virtual nodes are distinct", func(t *testing.T) {
		seen := make(map[string]string)
		for _, n := range names {
			for i := range cfg.ReplicationFactor {
				// The name consistent hashes for replica i (consistent.go, add).
				vnode := fmt.Sprintf("%s%d", memberOf(n).String(), i)
				if other, ok := seen[vnode]; ok {
					t.Fatalf("replica %d of %q is named %q, as is a replica of %q", i, n, vnode, other)
				}
				seen[vnode] = n
			}
		}
	})

	t.Run("consistent is independent of order", func(t *testing.T) {
		forward := make([]consistent.Member, len(names))
		for i, n := range names {
			forward[i] = memberOf(n)
		}
		backward := slices.Clone(forward)
		slices.Reverse(backward)
		a, b := newConsistent(cfg, forward), newConsistent(cfg, backward)
		diff := 0
		for p := range cfg.PartitionCount {
			if a.GetPartitionOwner(p).String() != b.GetPartitionOwner(p).String() {
				diff++
			}
		}
		if diff != 0 {
			t.Fatalf("%d of %d partitions have a different owner when the members are added in reverse order", diff, cfg.PartitionCount)
		}
	})

	t.Run("each keeps its share", func(t *testing.T) {
		r := mustNew(t, Config{}, "node1", "node11")
		count := map[string]int{}
		for _, name := range routes(t, r, testKeys(numKeys)) {
			count[name]++
		}
		// With raw names replicas 10-19 and 110-199 of node1 are also
		// replicas of node11 ("node1"+"110" == "node11"+"10"), node11 takes
		// those 100 points, and node1 kept 37% of the keys. A node with 200
		// points of 400 stays well inside 40-60%.
		for _, n := range []string{"node1", "node11"} {
			if share := float64(count[n]) / numKeys; share < 0.40 || share > 0.60 {
				t.Errorf("%s owns %.3f of keys, want 0.40-0.60", n, share)
			}
		}
		if err := r.Remove("node1"); err != nil {
			t.Fatalf("Remove(node1) = %v", err)
		}
		if got, _ := r.Locate("user:1"); got != "node11" {
			t.Fatalf("Locate after Remove(node1) = %q, want node11", got)
		}
	})
}

func TestRoutingIndependentOfInsertionOrder(t *testing.T) {
	names := []string{"redis-a:6379", "redis-b:6379", "redis-c:6379", "10.1.0.7:6379", "node1", "node11"}
	keys := testKeys(numKeys)
	want := routes(t, mustNew(t, Config{}, names...), keys)

	reversed := mustNew(t, Config{})
	for _, n := range slices.Backward(names) {
		if err := reversed.Add(n); err != nil {
			t.Fatalf("Add(%q) = %v", n, err)
		}
	}
	shuffled := mustNew(t, Config{}, "other-1", "other-2")
	perm := slices.Clone(names)
	rand.New(rand.NewPCG(7, 7)).Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
	if err := shuffled.Set(perm...); err != nil {
		t.Fatalf("Set(%q) = %v", perm, err)
	}
	viaRemove := mustNew(t, Config{}, append(slices.Clone(names), "gone-1", "gone-2")...)
	for _, n := range []string{"gone-2", "gone-1"} {
		if err := viaRemove.Remove(n); err != nil {
			t.Fatalf("Remove(%q) = %v", n, err)
		}
	}
	for _, tt := range []struct {
		how string
		r   *Ring
	}{{"added in reverse", reversed}, {"Set shuffled", shuffled}, {"after removals", viaRemove}} {
		if diff := countDiff(routes(t, tt.r, keys), want); diff != 0 {
			t.Errorf("%s: %d of %d keys routed differently", tt.how, diff, numKeys)
		}
	}
}

// TestRoutingIsStable pins a few routes of the default Config. Every process
// of a deployment must route alike; a change to the member encoding, the
// hash or the defaults re-routes keys between versions, and must be made on
// purpose.
func TestRoutingIsStable(t *testing.T) {
	r := mustNew(t, Config{}, "redis-a", "redis-b", "redis-c")
	want := map[string]string{
		"user:1":      "redis-c",
		"user:2":      "redis-b",
		"user:3":      "redis-a",
		"user:42":     "redis-c",
		"ip:10.0.0.1": "redis-b",
		"tenant:acme": "redis-a",
		"":            "redis-c",
		"x":           "redis-a",
	}
	for k, w := range want {
		if got, _ := r.Locate(k); got != w {
			t.Errorf("Locate(%q) = %q, want %q", k, got, w)
		}
	}
}

func TestLocateMatchesConsistent(t *testing.T) {
	r := mustNew(t, Config{}, "redis-a", "redis-b", "redis-c", "redis-d")
	s := r.snap.Load()
	for _, k := range testKeys(numKeys) {
		got, _ := r.Locate(k)
		gotBytes, _ := r.LocateBytes([]byte(k))
		want := s.c.LocateKey([]byte(k)).(member).name()
		if got != want || gotBytes != want {
			t.Fatalf("Locate(%q), LocateBytes = %q, %q, want %q (consistent.LocateKey)", k, got, gotBytes, want)
		}
	}
}

func TestAddMovesAboutAQuarter(t *testing.T) {
	keys := testKeys(numKeys)
	r := mustNew(t, Config{}, "redis-a", "redis-b", "redis-c")
	before := routes(t, r, keys)
	if err := r.Add("redis-d"); err != nil {
		t.Fatalf("Add(redis-d) = %v", err)
	}
	after := routes(t, r, keys)
	moved, notToNew := 0, 0
	for i := range keys {
		if before[i] != after[i] {
			moved++
			if after[i] != "redis-d" {
				notToNew++
			}
		}
	}
	frac := float64(moved) / numKeys
	t.Logf("adding a 4th node to 3 moved %d of %d keys (%.4f); %d moved between the old nodes", moved, numKeys, frac, notToNew)
	if frac < 0.20 || frac > 0.32 {
		t.Errorf("fraction moved = %.4f, want 0.20-0.32", frac)
	}
	if notToNew > numKeys/1000 {
		t.Errorf("%d keys moved between nodes that stayed, want at most %d", notToNew, numKeys/1000)
	}
}

func TestRemoveMovesOnlyThatNodesKeys(t *testing.T) {
	keys := testKeys(numKeys)
	r := mustNew(t, Config{}, "redis-a", "redis-b", "redis-c", "redis-d")
	before := routes(t, r, keys)
	if err := r.Remove("redis-b"); err != nil {
		t.Fatalf("Remove(redis-b) = %v", err)
	}
	after := routes(t, r, keys)
	owned, others := 0, 0
	for i := range keys {
		switch {
		case before[i] == "redis-b":
			owned++
			if after[i] == "redis-b" {
				t.Fatalf("Locate(%q) = redis-b after Remove(redis-b)", keys[i])
			}
		case before[i] != after[i]:
			others++
		}
	}
	t.Logf("removing 1 of 4 nodes moved its %d keys (%.4f) and %d keys of the other nodes", owned, float64(owned)/numKeys, others)
	if others > numKeys/1000 {
		t.Errorf("%d keys not owned by the removed node moved, want at most %d", others, numKeys/1000)
	}
}

func TestBalance(t *testing.T) {
	for _, names := range [][]string{
		{"redis-a", "redis-b", "redis-c"},
		{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"},
		{"node1", "node11", "node111"},
	} {
		t.Run(strings.Join(names, ","), func(t *testing.T) {
			r := mustNew(t, Config{}, names...)
			count := map[string]int{}
			for _, name := range routes(t, r, testKeys(numKeys)) {
				count[name]++
			}
			lo, hi := numKeys, 0
			for _, n := range names {
				lo, hi = min(lo, count[n]), max(hi, count[n])
			}
			ratio := float64(hi) / float64(lo)
			t.Logf("keys per node %v: max/min = %.3f", count, ratio)
			if ratio > 1.45 {
				t.Errorf("max/min keys per node = %.3f, want at most 1.45", ratio)
			}
			// The load bound holds on partitions, whatever the names.
			cfg := r.Config()
			bound := math.Ceil(float64(cfg.PartitionCount/len(names)) * cfg.Load)
			for n, load := range r.snap.Load().c.LoadDistribution() {
				if load > bound {
					t.Errorf("%s owns %v partitions, above the bound %v", n, load, bound)
				}
			}
		})
	}
}

func TestFailedChangeKeepsOldRing(t *testing.T) {
	long := strings.Repeat("x", MaxNameLen+1)
	tests := []struct {
		name   string
		change func(r *Ring) error
		want   error
	}{
		{"Add empty", func(r *Ring) error { return r.Add("") }, ErrInvalidName},
		{"Add member", func(r *Ring) error { return r.Add("redis-b") }, ErrInvalidName},
		{"Add too long", func(r *Ring) error { return r.Add(long) }, ErrInvalidName},
		{"Remove unknown", func(r *Ring) error { return r.Remove("redis-x") }, ErrUnknownNode},
		{"Remove empty", func(r *Ring) error { return r.Remove("") }, ErrUnknownNode},
		{"Remove too long", func(r *Ring) error { return r.Remove(long) }, ErrUnknownNode},
		{"Set twice", func(r *Ring) error { return r.Set("a", "b", "a") }, ErrInvalidName},
		{"Set empty name", func(r *Ring) error { return r.Set("a", "") }, ErrInvalidName},
		{"Set too many for the partitions", func(r *Ring) error {
			names := make([]string, r.Config().PartitionCount+1)
			for i := range names {
				names[i] = fmt.Sprint("n", i)
			}
			return r.Set(names...)
		}, ErrRing},
	}
	keys := testKeys(10_000)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustNew(t, Config{PartitionCount: 271, ReplicationFactor: 10}, "redis-a", "redis-b", "redis-c")
			snap := r.snap.Load()
			before := routes(t, r, keys)
			err := tt.change(r)
			if !errors.Is(err, tt.want) {
				t.Fatalf("change = %v, want %v", err, tt.want)
			}
			t.Logf("error: %v", err)
			if r.snap.Load() != snap {
				t.Fatalf("snapshot replaced after a failed change")
			}
			if got := r.Members(); !slices.Equal(got, []string{"redis-a", "redis-b", "redis-c"}) {
				t.Fatalf("Members() = %q after a failed change", got)
			}
			if diff := countDiff(routes(t, r, keys), before); diff != 0 {
				t.Fatalf("%d keys re-routed after a failed change", diff)
			}
		})
	}
}

// TestConsistentPanicBecomesErrRing drives consistent into its "not enough
// room to distribute partitions" panic: with Load 1 two members may own
// floor(7919/2) partitions each, one short of 7919.
func TestConsistentPanicBecomesErrRing(t *testing.T) {
	r := mustNew(t, Config{Load: 1}, "a")
	snap := r.snap.Load()
	err := r.Add("b")
	if !errors.Is(err, ErrRing) || !strings.Contains(err.Error(), "not enough room") {
		t.Fatalf("Add(b) with Load 1 = %v, want ErrRing (not enough room)", err)
	}
	if r.snap.Load() != snap || r.Len() != 1 {
		t.Fatalf("failed Add changed the ring: Members() = %q", r.Members())
	}
	if got, ok := r.Locate("k"); got != "a" || !ok {
		t.Fatalf("Locate(k) = %q, %v, want a, true", got, ok)
	}
	if r, err := New(Config{Load: 1}, "a", "b"); !errors.Is(err, ErrRing) || r != nil {
		t.Fatalf("New(Load 1, a, b) = %v, %v, want nil, ErrRing", r, err)
	}
	if _, err := New(Config{PartitionCount: 2}, "a", "b", "c"); !errors.Is(err, ErrRing) {
		t.Fatalf("New(2 partitions, 3 names) = %v, want ErrRing", err)
	}
}

func TestRemoveLastNodeEmptiesRing(t *testing.T) {
	r := mustNew(t, Config{}, "only")
	if err := r.Remove("only"); err != nil {
		t.Fatalf("Remove(only) = %v", err)
	}
	if got, ok := r.Locate("k"); ok || got != "" {
		t.Fatalf("Locate(k) on an empty ring = %q, %v, want \"\", false", got, ok)
	}
	if got, ok := r.LocateBytes([]byte("k")); ok || got != "" {
		t.Fatalf("LocateBytes(k) on an empty ring = %q, %v, want \"\", false", got, ok)
	}
	if r.Len() != 0 || len(r.Members()) != 0 {
		t.Fatalf("Len(), Members() = %d, %q, want 0, []", r.Len(), r.Members())
	}
	if err := r.Remove("only"); !errors.Is(err, ErrUnknownNode) {
		t.Fatalf("second Remove(only) = %v, want ErrUnknownNode", err)
	}
	if err := r.Add("next"); err != nil {
		t.Fatalf("Add(next) = %v", err)
	}
	if got, ok := r.Locate("k"); got != "next" || !ok {
		t.Fatalf("Locate(k) = %q, %v, want next, true", got, ok)
	}
	if err := r.Set(); err != nil || r.Len() != 0 {
		t.Fatalf("Set() = %v with Len() = %d, want nil, 0", err, r.Len())
	}
}

func TestZeroRing(t *testing.T) {
	var r Ring
	if got, ok := r.Locate("k"); ok || got != "" {
		t.Fatalf("Locate on the zero Ring = %q, %v, want \"\", false", got, ok)
	}
	if err := r.Add("a"); err != nil {
		t.Fatalf("Add(a) = %v", err)
	}
	if got, ok := r.Locate("k"); got != "a" || !ok {
		t.Fatalf("Locate(k) = %q, %v, want a, true", got, ok)
	}
}

func TestSetReplacesMembership(t *testing.T) {
	r := mustNew(t, Config{}, "a", "b", "c")
	if err := r.Set("d", "b"); err != nil {
		t.Fatalf("Set(d, b) = %v", err)
	}
	if got := r.Members(); !slices.Equal(got, []string{"b", "d"}) {
		t.Fatalf("Members() = %q, want [b d]", got)
	}
	snap := r.snap.Load()
	if err := r.Set("b", "d"); err != nil || r.snap.Load() != snap {
		t.Fatalf("Set of the same names = %v, replaced the snapshot: %v", err, r.snap.Load() != snap)
	}
	for _, k := range testKeys(1000) {
		if got, _ := r.Locate(k); got != "b" && got != "d" {
			t.Fatalf("Locate(%q) = %q, want b or d", k, got)
		}
	}
}

func TestMembersReturnsCopy(t *testing.T) {
	r := mustNew(t, Config{}, "c", "a", "b")
	got := r.Members()
	if !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("Members() = %q, want [a b c]", got)
	}
	got[0] = "zzz"
	if again := r.Members(); again[0] != "a" {
		t.Fatalf("Members() = %q after the caller changed its copy", again)
	}
}

func TestLocateDoesNotAllocate(t *testing.T) {
	r := mustNew(t, Config{}, "redis-a", "redis-b", "redis-c")
	key, keyBytes := "user:12345", []byte("user:12345")
	if n := testing.AllocsPerRun(1000, func() { r.Locate(key) }); n != 0 {
		t.Errorf("Locate allocates %v times, want 0", n)
	}
	if n := testing.AllocsPerRun(1000, func() { r.LocateBytes(keyBytes) }); n != 0 {
		t.Errorf("LocateBytes allocates %v times, want 0", n)
	}
}

// TestConcurrentLocateDuringChanges runs readers against a writer that keeps
// changing the membership. Invariant: every Locate returns a name that had
// been added before the call, and never reports an empty ring (one node is
// never removed).
func TestConcurrentLocateDuringChanges(t *testing.T) {
	const anchor = "anchor"
	pool := []string{"n1", "n11", "n2", "n3", "n4", "n5"}
	var everAdded sync.Map // name -> true, stored before the name is added
	everAdded.Store(anchor, true)
	r := mustNew(t, Config{PartitionCount: 1021, ReplicationFactor: 50}, anchor)

	var (
		stop       atomic.Bool
		wg         sync.WaitGroup
		locates    atomic.Int64
		violations atomic.Int64
		firstBad   atomic.Value
	)
	keys := testKeys(4096)
	for g := range 4 {
		wg.Go(func() {
			for i := g; !stop.Load(); i++ {
				k := keys[i%len(keys)]
				var name string
				var ok bool
				if i%2 == 0 {
					name, ok = r.Locate(k)
				} else {
					name, ok = r.LocateBytes([]byte(k))
				}
				if _, added := everAdded.Load(name); !ok || !added {
					violations.Add(1)
					firstBad.CompareAndSwap(nil, fmt.Sprintf("Locate(%q) = %q, %v", k, name, ok))
				}
				if i%1024 == 0 {
					m := r.Members()
					if !slices.IsSorted(m) || !slices.Contains(m, anchor) {
						violations.Add(1)
						firstBad.CompareAndSwap(nil, fmt.Sprintf("Members() = %q", m))
					}
				}
				locates.Add(1)
			}
		})
	}

	rng := rand.New(rand.NewPCG(1, 1))
	model := map[string]bool{anchor: true}
	for range 300 {
		n := pool[rng.IntN(len(pool))]
		switch op := rng.IntN(3); {
		case op == 2:
			set := []string{anchor}
			for _, p := range pool {
				if rng.IntN(2) == 0 {
					set = append(set, p)
				}
			}
			for _, p := range set {
				everAdded.Store(p, true)
			}
			if err := r.Set(set...); err != nil {
				t.Fatalf("Set(%q) = %v", set, err)
			}
			clear(model)
			for _, p := range set {
				model[p] = true
			}
		case model[n]:
			if err := r.Remove(n); err != nil {
				t.Fatalf("Remove(%q) = %v", n, err)
			}
			delete(model, n)
		default:
			everAdded.Store(n, true)
			if err := r.Add(n); err != nil {
				t.Fatalf("Add(%q) = %v", n, err)
			}
			model[n] = true
		}
	}
	stop.Store(true)
	wg.Wait()

	if v := violations.Load(); v != 0 {
		t.Fatalf("%d violations of %d Locates; first: %v", v, locates.Load(), firstBad.Load())
	}
	want := make([]string, 0, len(model))
	for n := range model {
		want = append(want, n)
	}
	slices.Sort(want)
	if got := r.Members(); !slices.Equal(got, want) {
		t.Fatalf("Members() = %q, want %q", got, want)
	}
	if locates.Load() == 0 {
		t.Fatal("readers made no Locate call")
	}
	t.Logf("%d Locates during 300 changes", locates.Load())
}
