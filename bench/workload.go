package main

import (
	"math/rand/v2"
	"strconv"
	"sync"

	"github.com/hybridlimit/hybridlimit/hybrid"
)

// Key spaces of the zipf and uniform workloads, as in hybrid/bench_test.go.
const (
	zipfKeyCount    = 1_000_000
	zipfS           = 1.1
	uniformKeyCount = 100_000
)

// workload is a key mix and the limit every key gets.
type workload struct {
	name  string
	limit hybrid.Limit
	keys  []string // the key space; requests pick an index into it
	zipf  bool     // pick Zipf-distributed indexes, else uniform ones
}

// workloadNames lists the workloads in the order they run.
func workloadNames() []string { return []string{"hot", "overlimit", "zipf", "uniform"} }

var (
	zipfKeys    = sync.OnceValue(func() []string { return keySpace("z:", zipfKeyCount) })
	uniformKeys = sync.OnceValue(func() []string { return keySpace("u:", uniformKeyCount) })
)

func keySpace(prefix string, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = prefix + strconv.Itoa(i)
	}
	return keys
}

// newWorkload returns the workload of that name, one of workloadNames:
//   - hot: one key well within its limit (PerSecond(1e9)): every decision
//     is an admission, the cost of a decision on a hot key;
//   - overlimit: one key far over its limit (PerSecond(10)): almost every
//     decision is a denial, the cost of an abusive client;
//   - zipf: Zipf s=1.1 over 1,000,000 keys, PerSecond(1000) per key: a
//     few hot keys, a long cold tail;
//   - uniform: 100,000 keys picked uniformly, PerMinute(1e6) per key:
//     every key cold, nothing denied.
func newWorkload(name string) workload {
	switch name {
	case "hot":
		return workload{name: name, limit: hybrid.PerSecond(1_000_000_000), keys: []string{"hot"}}
	case "overlimit":
		return workload{name: name, limit: hybrid.PerSecond(10), keys: []string{"abuser"}}
	case "zipf":
		return workload{name: name, limit: hybrid.PerSecond(1000), keys: zipfKeys(), zipf: true}
	case "uniform":
		return workload{name: name, limit: hybrid.PerMinute(1_000_000), keys: uniformKeys()}
	}
	panic("bench: unknown workload " + name) // parse accepts only workloadNames
}

// picker draws key indexes for one goroutine. It is not safe for
// concurrent use.
type picker struct {
	n    int
	rng  *rand.Rand
	zipf *rand.Zipf
}

func (w workload) picker(seed uint64) *picker {
	p := &picker{n: len(w.keys), rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))}
	if w.zipf {
		p.zipf = rand.NewZipf(p.rng, zipfS, 1, uint64(len(w.keys)-1))
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
