package shard

import (
	"fmt"
	"testing"
)

// Locate is what every rate-limit decision pays, so it is measured against
// the path it replaces, consistent's LocateKey: that one takes the ring's
// RWMutex for reading and hashes through the Hasher interface, which makes
// the key escape (one allocation when the key is a string).
//
//	go test -run '^$' -bench . -cpu 1,2 ./shard/

// benchNames returns n node names shaped like Redis addresses.
func benchNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("10.0.0.%d:6379", i+1)
	}
	return names
}

// benchKeys are the keys benchmarks look up, cycled through by index.
var benchKeys = testKeys(1 << 12)

func BenchmarkLocate(b *testing.B) {
	for _, n := range []int{3, 16} {
		r := mustNew(b, Config{}, benchNames(n)...)
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				r.Locate(benchKeys[i&(len(benchKeys)-1)])
				i++
			}
		})
	}
}

func BenchmarkLocateBytes(b *testing.B) {
	r := mustNew(b, Config{}, benchNames(3)...)
	keys := make([][]byte, len(benchKeys))
	for i, k := range benchKeys {
		keys[i] = []byte(k)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		r.LocateBytes(keys[i&(len(keys)-1)])
		i++
	}
}

// BenchmarkLocateParallel is Locate from every P at once, as a busy server
// calls it: the snapshot is read through one atomic pointer, with no shared
// write.
func BenchmarkLocateParallel(b *testing.B) {
	r := mustNew(b, Config{}, benchNames(3)...)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			r.Locate(benchKeys[i&(len(benchKeys)-1)])
			i++
		}
	})
}

// BenchmarkConsistentLocateKey is the same lookup through consistent's
// LocateKey on the same ring, for comparison.
func BenchmarkConsistentLocateKey(b *testing.B) {
	c := mustNew(b, Config{}, benchNames(3)...).snap.Load().c
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			_ = c.LocateKey([]byte(benchKeys[i&(len(benchKeys)-1)])).(member).name()
			i++
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				_ = c.LocateKey([]byte(benchKeys[i&(len(benchKeys)-1)])).(member).name()
				i++
			}
		})
	})
}

// BenchmarkSet is the cost of a membership change: a ring built from
// scratch, validated and swapped in. Each iteration alternates between two
// memberships that differ by one node.
func BenchmarkSet(b *testing.B) {
	for _, n := range []int{4, 16} {
		names := benchNames(n + 1)
		r := mustNew(b, Config{}, names[:n]...)
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := r.Set(names[i%2 : n+i%2]...); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
