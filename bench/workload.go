package main

import (
	crand "crypto/rand"
	"encoding/hex"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/hybridlimit/hybridlimit/hybrid"
)

// Key spaces of the zipf and uniform workloads, as in hybrid/bench_test.go,
// and of the seed workload: the 10 M clients of the seed's service.
const (
	zipfKeyCount    = 1_000_000
	zipfS           = 1.1
	uniformKeyCount = 100_000
	seedKeyCount    = 10_000_000
)

// seedWorkload names the workload of the seed's service (issue 14): Zipf
// over 10 M clients, each under 100/m and 1000/h. It runs when named, not
// with -workload all.
const seedWorkload = "seed"

// hybridPrefix starts the Redis keys of the hybridlimit side (its
// Config.Prefix). redis_rate puts "rate:" before the user key.
const hybridPrefix = "hlb:"

// runID makes the keys of this process its own: every user key starts
// with "hlbench:<runID>:", so that on nodes given with -nodes bench finds
// and deletes exactly the keys it wrote, and never a user's.
var runID = sync.OnceValue(func() string {
	var b [4]byte
	if _, err := crand.Read(b[:]); err != nil {
		return strconv.FormatInt(time.Now().UnixNano()%1e8, 36)
	}
	return hex.EncodeToString(b[:])
})

// keyPrefix starts every user key of this process.
func keyPrefix() string { return "hlbench:" + runID() + ":" }

// ownPatterns are the SCAN patterns of every Redis key this process
// writes: hybrid's (prefix, then the user key in a hash tag) and
// redis_rate's.
func ownPatterns() []string {
	return []string{hybridPrefix + "{" + keyPrefix() + "*", "rate:" + keyPrefix() + "*"}
}

// workload is a key mix and the limits every key gets: each request is
// charged against all of them (see system).
type workload struct {
	name   string
	limits []hybrid.Limit // one or more, in -limit's order
	keys   keySpace       // requests pick an index into it
	zipf   bool           // pick Zipf-distributed indexes, else uniform ones
	s      float64        // the Zipf exponent
}

// workloadNames lists the workloads of -workload all, in the order they
// run.
func workloadNames() []string { return []string{"hot", "overlimit", "zipf", "uniform"} }

// knownWorkloads lists every workload -workload names: those of all, then
// the seed's.
func knownWorkloads() []string { return append(workloadNames(), seedWorkload) }

// defaultLimits are the limits of a workload when -limit is not given:
//   - hot, PerSecond(1e9): every decision an admission, the cost of a
//     decision on a hot key; with -sweep PerSecond(1e6), which the load
//     exceeds, so that the lease size matters and accuracy can be read;
//   - overlimit, PerSecond(10000): almost every decision a denial, an
//     abusive client hammering a fast limit (a slow limit's denials are
//     cached for long; a fast one's refill must be taken as it comes);
//   - zipf, PerSecond(1000) per key: a few hot keys over it, a cold tail;
//   - uniform, PerMinute(1e6) per key: every key cold, nothing denied;
//   - seed, PerMinute(100) and PerHour(1000): the seed's rules, every
//     request charged against both.
func defaultLimits(name, mode string) []hybrid.Limit {
	switch name {
	case "hot":
		if mode == modeSweep {
			return []hybrid.Limit{hybrid.PerSecond(1_000_000)}
		}
		return []hybrid.Limit{hybrid.PerSecond(1_000_000_000)}
	case "overlimit":
		return []hybrid.Limit{hybrid.PerSecond(10_000)}
	case "zipf":
		return []hybrid.Limit{hybrid.PerSecond(1000)}
	case seedWorkload:
		return []hybrid.Limit{hybrid.PerMinute(100), hybrid.PerHour(1000)}
	default:
		return []hybrid.Limit{hybrid.PerMinute(1_000_000)}
	}
}

// workloadLimits are the limits the named workload runs with: -limit's
// or the defaults, each with -algorithm.
func (s settings) workloadLimits(name string) []hybrid.Limit {
	from := s.limits
	if from == nil {
		from = defaultLimits(name, s.mode)
	}
	out := make([]hybrid.Limit, len(from))
	for i, l := range from {
		out[i] = hybrid.Limit{Algorithm: s.algorithm, Rate: l.Rate, Period: l.Period}
	}
	return out
}

// keyCount is the key-space size of the named workload.
func (s settings) keyCount(name string) int {
	switch {
	case name == "hot" || name == "overlimit":
		return 1
	case s.keys > 0:
		return s.keys
	case name == "zipf":
		return zipfKeyCount
	case name == seedWorkload:
		return seedKeyCount
	}
	return uniformKeyCount
}

// newWorkload returns the workload of that name, one of knownWorkloads,
// with the limits and key space the settings give it.
func newWorkload(name string, s settings) workload {
	w := workload{name: name, limits: s.workloadLimits(name), s: s.zipfS}
	switch name {
	case "hot":
		w.keys = oneKey("hot")
	case "overlimit":
		w.keys = oneKey("abuser")
	case "zipf":
		w.keys = listedKeys("z:", s.keyCount(name))
		w.zipf = true
	case seedWorkload:
		w.keys = madeKeys("s:", s.keyCount(name))
		w.zipf = true
	default:
		w.keys = listedKeys("u:", s.keyCount(name))
	}
	return w
}

// keySpace is a workload's keys, "hlbench:<runID>:<kind><i>" for i in
// [0, n), or one named key. They are held in memory (listedKeys), or
// made from the index on each request (madeKeys): the seed's 10 M keys
// held take 0.9 s to build and 456 MB of heap, which each garbage
// collection would scan. A made key costs one allocation, the string, as
// a service building a client's key for each request pays: 110-125 ns a
// request against 65-83 ns for a held key, the Zipf draw included, over
// 1 M or 10 M keys, and 25 B (BenchmarkKey, 2 cores), paid alike by both
// systems; under 1 % of a decision that asks Redis (5-50 µs of CPU),
// more of one answered in process. It is safe for concurrent use.
type keySpace struct {
	list   []string // every key; nil: made by key on each call
	prefix string   // of the made keys
	n      int
}

// oneKey is the key space of one key, "hlbench:<runID>:<name>".
func oneKey(name string) keySpace {
	return keySpace{list: []string{keyPrefix() + name}, n: 1}
}

// listedKeys is the key space of n keys of a kind, held in memory.
func listedKeys(kind string, n int) keySpace {
	return keySpace{list: keyList(kind, n), n: n}
}

// madeKeys is the key space of n keys of a kind, each made when asked
// for.
func madeKeys(kind string, n int) keySpace {
	return keySpace{prefix: keyPrefix() + kind, n: n}
}

// len is the number of keys.
func (ks keySpace) len() int { return ks.n }

// key returns the i-th key, i in [0, len()).
func (ks keySpace) key(i int) string {
	if ks.list != nil {
		return ks.list[i]
	}
	var buf [64]byte // on the stack: the string is the one allocation
	return string(strconv.AppendInt(append(buf[:0], ks.prefix...), int64(i), 10))
}

// keyLists caches listed key spaces by kind and size: building a million
// keys takes a while, and every run of a process uses the same ones.
var keyLists = struct {
	mu sync.Mutex
	m  map[string][]string
}{m: map[string][]string{}}

// keyList returns n keys "hlbench:<runID>:<kind><i>".
func keyList(kind string, n int) []string {
	keyLists.mu.Lock()
	defer keyLists.mu.Unlock()
	id := kind + strconv.Itoa(n)
	if ks, ok := keyLists.m[id]; ok {
		return ks
	}
	prefix := keyPrefix() + kind
	keys := make([]string, n)
	for i := range keys {
		keys[i] = prefix + strconv.Itoa(i)
	}
	keyLists.m[id] = keys
	return keys
}

// picker draws key indexes for one goroutine. It is not safe for
// concurrent use.
type picker struct {
	n    int
	rng  *rand.Rand
	zipf *rand.Zipf
}

func (w workload) picker(seed uint64) *picker {
	p := &picker{n: w.keys.len(), rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))}
	if w.zipf && p.n > 1 {
		p.zipf = rand.NewZipf(p.rng, w.s, 1, uint64(p.n-1))
	}
	return p
}

func (p *picker) next() int {
	switch {
	case p.n == 1:
		return 0
	case p.zipf != nil:
		return int(p.zipf.Uint64())
	default:
		return p.rng.IntN(p.n)
	}
}
