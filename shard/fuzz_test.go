package shard

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/buraksezer/consistent"
)

// fuzzConfig maps fuzzed numbers to a Config, kept small enough that a ring
// builds quickly but including zero (defaults) and invalid values.
func fuzzConfig(partitions uint16, replicas uint8, loadPermille uint16) Config {
	return Config{
		PartitionCount:    int(partitions%1024) - 1, // -1 is invalid, 0 the default
		ReplicationFactor: int(replicas % 48),       // 1 is invalid, 0 the default
		Load:              float64(loadPermille) / 1000,
	}
}

// fuzzNames splits a fuzzed string into at most 16 names, one a line.
func fuzzNames(s string) []string {
	if s == "" {
		return nil
	}
	names := strings.Split(s, "\n")
	return names[:min(len(names), 16)]
}

// FuzzRingBuild checks, for arbitrary names, configs and keys, that New never
// panics and fails only with its sentinels; that a built ring locates every
// key on a member; and that the same set of names reached in another order,
// through Add or Set, routes every partition alike, as does consistent itself
// given the members in reverse order (which names colliding on virtual nodes
// would break).
func FuzzRingBuild(f *testing.F) {
	f.Add("node1\nnode11", "user:42", uint16(272), uint8(20), uint16(1250))
	f.Add("a\na1\na11\na#1\na#\n#", "k", uint16(62), uint8(10), uint16(0))
	f.Add("redis-a\nredis-b\nredis-c", "", uint16(0), uint8(0), uint16(0))
	f.Add("a\nb\nc", "x", uint16(3), uint8(2), uint16(1000)) // three members, two partitions
	f.Add("a\nb", "x", uint16(100), uint8(2), uint16(1000))  // Load 1: not enough room
	f.Add("a\na", "x", uint16(10), uint8(5), uint16(1500))   // duplicate
	f.Add("a\n\nb", "x", uint16(10), uint8(5), uint16(1500)) // empty name
	f.Add("x", "y", uint16(10), uint8(1), uint16(1500))      // one replica
	f.Add("\x00\n\xff\n1\n11\n111", "\x00", uint16(20), uint8(3), uint16(999))
	f.Add(strings.Repeat("n", MaxNameLen+1), "k", uint16(5), uint8(3), uint16(2000))
	f.Fuzz(func(t *testing.T, namesBlob, key string, partitions uint16, replicas uint8, loadPermille uint16) {
		cfg := fuzzConfig(partitions, replicas, loadPermille)
		names := fuzzNames(namesBlob)
		r, err := New(cfg, names...)
		if cfgErr := cfg.withDefaults().validate(); cfgErr != nil {
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("New(%+v) = %v, want ErrInvalidConfig", cfg, err)
			}
			return
		}
		sorted, namesErr := sortedNames(names)
		if namesErr != nil {
			if !errors.Is(err, ErrInvalidName) {
				t.Fatalf("New(%q) = %v, want ErrInvalidName", names, err)
			}
			return
		}
		if err != nil {
			if !errors.Is(err, ErrRing) || r != nil {
				t.Fatalf("New(%+v, %q) = %v, %v, want nil, ErrRing", cfg, names, r, err)
			}
			return
		}

		if got := r.Members(); !slices.Equal(got, sorted) {
			t.Fatalf("Members() = %q, want %q", got, sorted)
		}
		name, ok := r.Locate(key)
		nameB, okB := r.LocateBytes([]byte(key))
		if ok != (len(names) > 0) || name != nameB || ok != okB {
			t.Fatalf("Locate(%q), LocateBytes = %q, %v, %q, %v with %d members", key, name, ok, nameB, okB, len(names))
		}
		if ok && !slices.Contains(names, name) {
			t.Fatalf("Locate(%q) = %q, not a member of %q", key, name, names)
		}
		if len(names) == 0 {
			return
		}

		// The same set, reached by adding the names one by one in reverse
		// (or, when an intermediate set cannot be built, by Set).
		other := mustNew(t, cfg)
		for _, n := range slices.Backward(names) {
			if other.Add(n) != nil {
				break
			}
		}
		if other.Len() != len(names) {
			reversed := slices.Clone(names)
			slices.Reverse(reversed)
			if err := other.Set(reversed...); err != nil {
				t.Fatalf("Set(%q) = %v after New of the same names succeeded", reversed, err)
			}
		}
		if a, b := r.snap.Load(), other.snap.Load(); !slices.Equal(a.owner, b.owner) || !slices.Equal(a.names, b.names) {
			t.Fatalf("the same names reached in another order route %d partitions differently", countDiff32(a.owner, b.owner))
		}
		for i := range 16 {
			k := key + string(rune('a'+i))
			x, _ := r.Locate(k)
			y, _ := other.Locate(k)
			if x != y {
				t.Fatalf("Locate(%q) = %q and %q for the same names", k, x, y)
			}
		}

		// consistent itself, given our members in reverse order.
		full := cfg.withDefaults()
		members := make([]consistent.Member, len(names))
		for i, n := range slices.Backward(names) {
			members[len(names)-1-i] = memberOf(n)
		}
		c := newConsistent(full, members)
		s := r.snap.Load()
		for p := range full.PartitionCount {
			if got, want := c.GetPartitionOwner(p).(member).name(), s.names[s.owner[p]]; got != want {
				t.Fatalf("partition %d: owner %q with the members reversed, %q sorted", p, got, want)
			}
		}
	})
}

func countDiff32(a, b []int32) int {
	n := max(len(a), len(b)) - min(len(a), len(b))
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

// FuzzRingOps applies a fuzzed sequence of Add, Remove, Set and Locate to a
// ring and to a model set, and checks after every step that the ring has the
// model's members, that a failed change returned the right sentinel and left
// the snapshot in place, and that Locate returns a member.
func FuzzRingOps(f *testing.F) {
	f.Add([]byte{0, 4, 8, 12, 1, 5, 2, 0xff, 3, 7})
	f.Add([]byte{0, 0, 1, 1, 2, 0, 3})
	f.Add([]byte{2, 0x55, 2, 0xaa, 1, 1, 9, 13, 17, 21, 25, 29})
	f.Add([]byte{28, 24, 20, 2, 0x80, 3, 3})
	f.Fuzz(checkOps)
}

// checkOps is the body of FuzzRingOps.
func checkOps(t *testing.T, ops []byte) {
	pool := []string{"a", "a1", "a11", "b", "b#", "#", "", strings.Repeat("z", MaxNameLen+1)}
	r := mustNew(t, Config{PartitionCount: 61, ReplicationFactor: 8})
	model := map[string]bool{}
	for i := 0; i < len(ops); i++ {
		op, name := ops[i]%4, pool[int(ops[i]/4)%len(pool)]
		before := r.snap.Load()
		var err, want error
		switch op {
		case 0:
			err = r.Add(name)
			switch {
			case checkName(name) != nil || model[name]:
				want = ErrInvalidName
			default:
				model[name] = true
			}
		case 1:
			err = r.Remove(name)
			if model[name] {
				delete(model, name)
			} else {
				want = ErrUnknownNode
			}
		case 2:
			var mask byte
			if i+1 < len(ops) {
				i++
				mask = ops[i]
			}
			var set []string
			for j, n := range pool {
				if mask&(1<<j) != 0 {
					set = append(set, n)
				}
			}
			err = r.Set(set...)
			if _, e := sortedNames(set); e != nil {
				want = ErrInvalidName
			} else {
				clear(model)
				for _, n := range set {
					model[n] = true
				}
			}
		case 3:
			key := string(ops[i:])
			got, ok := r.Locate(key)
			if ok != (len(model) > 0) || (ok && !model[got]) {
				t.Fatalf("Locate(%q) = %q, %v with members %v", key, got, ok, model)
			}
		}
		if !errors.Is(err, want) || (want == nil) != (err == nil) {
			t.Fatalf("op %d on %q = %v, want %v", op, name, err, want)
		}
		if err != nil && r.snap.Load() != before {
			t.Fatalf("op %d on %q failed (%v) but replaced the snapshot", op, name, err)
		}
		wantNames := make([]string, 0, len(model))
		for n := range model {
			wantNames = append(wantNames, n)
		}
		slices.Sort(wantNames)
		if got := r.Members(); !slices.Equal(got, wantNames) {
			t.Fatalf("Members() = %q, want %q", got, wantNames)
		}
	}
}
