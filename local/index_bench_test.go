package local

// The index benchmarks set the shard's hand-written index (index.go) against
// the plain alternative, mapIndex: a Go map from a key's hash to the head of
// its chain, with the same methods, used as the shard would use it. The
// hashes are those of the Limiter (maphash of "user:N" keys) over
// DefaultShards indexes, each holding the keys of its shard, so that the
// sizes and the spread over memory are those of a Limiter of that many keys:
//
//	BenchmarkIndexGet     a lookup of a key present, cycling through the keys
//	BenchmarkIndexChurn   a delete and an insert, the index keeping its size
//	BenchmarkIndexSample  the draws of the cleanup (tidySample heads) and of
//	                      an eviction (evictSample heads), from a random place
//
// Sub-benchmarks are named keys=N/impl=open (index) or impl=map (mapIndex).
// BenchmarkIndexGet also reports the heap the indexes hold, B/key. Compare
// with benchstat, runs interleaved:
//
//	go test -run '^$' -bench 'Index' -count 10 ./local/

import (
	"hash/maphash"
	"runtime"
	"strconv"
	"testing"
)

// mapIndex is the plain alternative to index: a Go map from a key's hash to
// the head of its chain, with index's methods. It lives in the tests only,
// for the benchmarks; shard.go can take it in place of index by changing
// the type of shard.m.
type mapIndex struct{ m map[uint64]*entry }

// indexMethods is the method set the shard uses of its index: mapIndex has
// all of it, so that it stays a drop-in for index.
type indexMethods interface {
	get(h uint64) *entry
	put(h uint64, e *entry)
	del(h uint64)
	len() int
	shrink()
	sample(fn func(head *entry) bool)
	heads() []*entry
}

var (
	_ indexMethods = (*index)(nil)
	_ indexMethods = (*mapIndex)(nil)
)

func (x *mapIndex) get(h uint64) *entry { return x.m[h] }

func (x *mapIndex) put(h uint64, e *entry) {
	if x.m == nil {
		x.m = make(map[uint64]*entry)
	}
	x.m[h] = e
}

func (x *mapIndex) del(h uint64) { delete(x.m, h) }

func (x *mapIndex) len() int { return len(x.m) }

// shrink copies the map into one sized for what it holds: a Go map never
// releases the memory of its peak.
func (x *mapIndex) shrink() {
	if len(x.m) == 0 {
		x.m = nil
		return
	}
	m := make(map[uint64]*entry, len(x.m))
	for h, e := range x.m {
		m[h] = e
	}
	x.m = m
}

// sample visits the heads in the map's iteration order, which starts at a
// random place.
func (x *mapIndex) sample(fn func(head *entry) bool) {
	for _, e := range x.m {
		if !fn(e) {
			return
		}
	}
}

func (x *mapIndex) heads() []*entry {
	out := make([]*entry, 0, len(x.m))
	for _, e := range x.m {
		out = append(out, e)
	}
	return out
}

// indexKeyCounts are the key counts of the index benchmarks, those of
// BenchmarkAllow.
var indexKeyCounts = []int{1, 10_000, 1_000_000}

// indexHashes returns the hashes of n distinct keys, as the Limiter hashes
// them, and the shard of each (its low bits, as Limiter.shardOf).
func indexHashes(n int) []uint64 {
	seed := maphash.MakeSeed()
	hs := make([]uint64, n)
	for i := range hs {
		hs[i] = maphash.String(seed, "user:"+strconv.Itoa(i))
	}
	return hs
}

// shardMask picks a hash's index among DefaultShards, as Limiter.shardOf.
const shardMask = DefaultShards - 1

// benchHead is the head every benchmark puts: the index never reads it.
var benchHead = new(entry)

// heapBytes returns the live heap after a collection.
func heapBytes() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// openIndexes and mapIndexes return DefaultShards indexes holding hs, and
// the heap their tables took per key (the shards' own fields left out).
func openIndexes(hs []uint64) ([]index, float64) {
	xs := make([]index, DefaultShards)
	before := heapBytes()
	for _, h := range hs {
		xs[h&shardMask].put(h, benchHead)
	}
	return xs, float64(heapBytes()-before) / float64(len(hs))
}

func mapIndexes(hs []uint64) ([]mapIndex, float64) {
	xs := make([]mapIndex, DefaultShards)
	before := heapBytes()
	for _, h := range hs {
		xs[h&shardMask].put(h, benchHead)
	}
	return xs, float64(heapBytes()-before) / float64(len(hs))
}

// The loops below are written once per structure, not through an interface
// or a type parameter: either would call the methods indirectly (the two
// pointer types share one generic shape), which the shard does not.

func BenchmarkIndexGet(b *testing.B) {
	for _, n := range indexKeyCounts {
		hs := indexHashes(n)
		b.Run("keys="+strconv.Itoa(n)+"/impl=open", func(b *testing.B) {
			xs, perKey := openIndexes(hs)
			i := 0
			for b.Loop() {
				h := hs[i]
				if xs[h&shardMask].get(h) == nil {
					b.Fatalf("get(%#x) = nil, want the head put", h)
				}
				if i++; i == len(hs) {
					i = 0
				}
			}
			b.ReportMetric(perKey, "B/key")
		})
		b.Run("keys="+strconv.Itoa(n)+"/impl=map", func(b *testing.B) {
			xs, perKey := mapIndexes(hs)
			i := 0
			for b.Loop() {
				h := hs[i]
				if xs[h&shardMask].get(h) == nil {
					b.Fatalf("get(%#x) = nil, want the head put", h)
				}
				if i++; i == len(hs) {
					i = 0
				}
			}
			b.ReportMetric(perKey, "B/key")
		})
	}
}

// BenchmarkIndexChurn deletes one key and inserts another per operation:
// the indexes hold n of 2n keys, and each operation replaces the oldest
// with the next, as a shard dropping an entry and inserting one does.
func BenchmarkIndexChurn(b *testing.B) {
	for _, n := range indexKeyCounts {
		hs := indexHashes(2 * n)
		b.Run("keys="+strconv.Itoa(n)+"/impl=open", func(b *testing.B) {
			xs, _ := openIndexes(hs[:n])
			out, in := 0, n
			for b.Loop() {
				h := hs[out]
				xs[h&shardMask].del(h)
				h = hs[in]
				xs[h&shardMask].put(h, benchHead)
				out, in = (out+1)%len(hs), (in+1)%len(hs)
			}
		})
		b.Run("keys="+strconv.Itoa(n)+"/impl=map", func(b *testing.B) {
			xs, _ := mapIndexes(hs[:n])
			out, in := 0, n
			for b.Loop() {
				h := hs[out]
				xs[h&shardMask].del(h)
				h = hs[in]
				xs[h&shardMask].put(h, benchHead)
				out, in = (out+1)%len(hs), (in+1)%len(hs)
			}
		})
	}
}

// BenchmarkIndexSample draws heads as the cleanup on insert does (tidy:
// tidySample heads) and as an eviction does (evict: evictSample), from the
// index of the shard of one key after another.
func BenchmarkIndexSample(b *testing.B) {
	for _, n := range indexKeyCounts {
		hs := indexHashes(n)
		for _, draws := range []int{tidySample, evictSample} {
			name := "keys=" + strconv.Itoa(n) + "/draws=" + strconv.Itoa(draws)
			b.Run(name+"/impl=open", func(b *testing.B) {
				xs, _ := openIndexes(hs)
				i, seen := 0, 0
				for b.Loop() {
					k := 0
					xs[hs[i]&shardMask].sample(func(*entry) bool { k++; return k < draws })
					seen += k
					if i++; i == len(hs) {
						i = 0
					}
				}
				b.ReportMetric(float64(seen)/float64(b.N), "heads/op")
			})
			b.Run(name+"/impl=map", func(b *testing.B) {
				xs, _ := mapIndexes(hs)
				i, seen := 0, 0
				for b.Loop() {
					k := 0
					xs[hs[i]&shardMask].sample(func(*entry) bool { k++; return k < draws })
					seen += k
					if i++; i == len(hs) {
						i = 0
					}
				}
				b.ReportMetric(float64(seen)/float64(b.N), "heads/op")
			})
		}
	}
}
