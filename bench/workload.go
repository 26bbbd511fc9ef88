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

// Key spaces of the zipf, uniform and seed workloads (doc.go).
const (
	zipfKeyCount    = 1_000_000
	zipfS           = 1.1
	uniformKeyCount = 100_000
	seedKeyCount    = 10_000_000
)

// seedWorkload is the seed's service (issue 14), run only when named.
const seedWorkload = "seed"

// hybridPrefix is hybridlimit's Config.Prefix; redis_rate's is "rate:".
const hybridPrefix = "hlb:"

// runID makes this process's keys its own, to delete exactly them on -nodes.
var runID = sync.OnceValue(func() string {
	var b [4]byte
	if _, err := crand.Read(b[:]); err != nil {
		return strconv.FormatInt(time.Now().UnixNano()%1e8, 36)
	}
	return hex.EncodeToString(b[:])
})

// keyPrefix starts every user key of this process.
func keyPrefix() string { return "hlbench:" + runID() + ":" }

// ownPatterns match every Redis key this process writes, hybrid's and redis_rate's.
func ownPatterns() []string {
	return []string{hybridPrefix + "{" + keyPrefix() + "*", "rate:" + keyPrefix() + "*"}
}

// workload is a key mix and the limits each request is charged against.
type workload struct {
	name   string
	limits []hybrid.Limit // one or more, in -limit's order
	keys   keySpace
	zipf   bool    // Zipf-distributed indexes, else uniform
	s      float64 // the Zipf exponent
}

// workloadNames lists the workloads of -workload all, in run order.
func workloadNames() []string { return []string{"hot", "overlimit", "zipf", "uniform"} }

// knownWorkloads lists every workload -workload names.
func knownWorkloads() []string { return append(workloadNames(), seedWorkload) }

// defaultLimits are a workload's limits without -limit (doc.go). With
// -sweep lease, hot's is below the load, so that lease size matters.
func defaultLimits(name, mode string) []hybrid.Limit {
	if name == "hot" && mode == modeSweep {
		return []hybrid.Limit{hybrid.PerSecond(1_000_000)}
	}
	return map[string][]hybrid.Limit{
		"hot": {hybrid.PerSecond(1_000_000_000)}, "overlimit": {hybrid.PerSecond(10_000)}, "zipf": {hybrid.PerSecond(1000)},
		"uniform": {hybrid.PerMinute(1_000_000)}, seedWorkload: {hybrid.PerMinute(100), hybrid.PerHour(1000)},
	}[name]
}

// workloadLimits are -limit's or the default limits, with -algorithm.
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

// newWorkload returns the named workload, one of knownWorkloads.
func newWorkload(name string, s settings) workload {
	w := workload{name: name, limits: s.workloadLimits(name), s: s.zipfS, zipf: name == "zipf" || name == seedWorkload}
	switch name {
	case "hot":
		w.keys = oneKey("hot")
	case "overlimit":
		w.keys = oneKey("abuser")
	case "zipf":
		w.keys = listedKeys("z:", s.keyCount(name))
	case seedWorkload:
		w.keys = madeKeys("s:", s.keyCount(name))
	default:
		w.keys = listedKeys("u:", s.keyCount(name))
	}
	return w
}

// keySpace is a workload's keys, "hlbench:<runID>:<kind><i>" for i in
// [0, n), or one named key: held, or made per request (BenchmarkKey), as
// the seed's 10 M held would weigh on every GC. Safe for concurrent use.
type keySpace struct {
	list   []string // every key; nil: made by key on each call
	prefix string   // of the made keys
	n      int
}

// oneKey is the key space of one key, "hlbench:<runID>:<name>".
func oneKey(name string) keySpace { return keySpace{list: []string{keyPrefix() + name}, n: 1} }

// listedKeys is the key space of n keys of a kind, held in memory.
func listedKeys(kind string, n int) keySpace { return keySpace{list: keyList(kind, n), n: n} }

// madeKeys is the key space of n keys of a kind, each made when asked for.
func madeKeys(kind string, n int) keySpace { return keySpace{prefix: keyPrefix() + kind, n: n} }

func (ks keySpace) len() int { return ks.n }

// key returns the i-th key, i in [0, len()).
func (ks keySpace) key(i int) string {
	if ks.list != nil {
		return ks.list[i]
	}
	var buf [64]byte // on the stack: the string is the one allocation
	return string(strconv.AppendInt(append(buf[:0], ks.prefix...), int64(i), 10))
}

// keyLists caches listed key spaces by kind and size for the process.
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
	keys := make([]string, n)
	for i := range keys {
		keys[i] = keyPrefix() + kind + strconv.Itoa(i)
	}
	keyLists.m[id] = keys
	return keys
}

// picker draws key indexes for one goroutine; not safe for concurrent use.
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
	}
	return p.rng.IntN(p.n)
}
