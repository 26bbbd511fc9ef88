package hybrid

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"sync/atomic"
	"time"
	"unsafe"
)

// counterStripes spreads the decision counters over cache lines: with one
// counter per Source, every goroutine answering from a lease would write the
// same line, and that line, not the lease, would set the pace.
const (
	counterStripeBits = 4
	counterStripes    = 1 << counterStripeBits
)

// counters counts decisions by Source and outcome.
type counters struct {
	stripes [counterStripes]struct {
		n [numSources][2]atomic.Int64 // [source][0 denied, 1 allowed]
		_ [64]byte
	}
}

func (c *counters) add(src Source, allowed bool) {
	o := 0
	if allowed {
		o = 1
	}
	c.stripes[stripe()].n[src][o].Add(1)
	if src != SourceRemote && rand.Uint32()%yieldEvery == 0 {
		// One answer in yieldEvery from memory (a lease, the denial
		// cache, the failure mode) yields the processor. A caller
		// that loops on Allow without ever blocking (a spinning client,
		// a CPU-bound handler) otherwise runs for a whole 10 ms time
		// slice at a time, and a goroutine whose Redis reply has arrived
		// waits behind all such callers, past its Timeout: the node
		// would be judged down and its keys answered by the failure mode
		// because our own process was busy. Without it
		// TestSpinningCallersDoNotStarveRedis admits 2.5× its limit.
		runtime.Gosched()
	}
}

// stripe picks the calling goroutine's stripe from the address of its
// stack. A goroutine keeps its stripe while it runs (its stack moves only
// when it grows), so a processor keeps writing lines it already holds; a
// random stripe per call made nearly every count move a line from the other
// processor's cache.
func stripe() int {
	var b byte
	p := uint64(uintptr(unsafe.Pointer(&b)))
	return int((p >> 10) * 0x9e3779b97f4a7c15 >> (64 - counterStripeBits))
}

// yieldEvery is how many answers from memory (a lease, the denial cache,
// the failure mode) pass between two yields of the processor, on average:
// rarely enough that the yields stay out of the p99 of those answers
// (DESIGN-NOTES, "Answers from memory yield the processor now and then").
const yieldEvery = 256

// load returns the totals: allowed and denied by Source.
func (c *counters) load() (allowed, denied [numSources]int64) {
	for i := range c.stripes {
		for s := range numSources {
			denied[s] += c.stripes[i].n[s][0].Load()
			allowed[s] += c.stripes[i].n[s][1].Load()
		}
	}
	return allowed, denied
}

// latencyBounds are the upper bounds of the round-trip histogram's buckets;
// a last bucket counts what is slower than all of them.
var latencyBounds = [...]time.Duration{
	100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond,
	10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, time.Second,
}

// histogram counts round-trip times in fixed buckets, lock-free.
type histogram struct {
	counts [len(latencyBounds) + 1]atomic.Int64
	sum    atomic.Int64 // nanoseconds
}

func (h *histogram) observe(d time.Duration) {
	i := 0
	for i < len(latencyBounds) && d > latencyBounds[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sum.Add(int64(d))
}

// Latency is a histogram of round-trip times to one node.
type Latency struct {
	// Bounds are the buckets' upper bounds (inclusive), ascending.
	Bounds []time.Duration
	// Counts has one more entry than Bounds: Counts[i] is the number of
	// round trips that took at most Bounds[i] and more than Bounds[i-1];
	// the last entry counts those slower than every bound. Not cumulative.
	Counts []int64
	// Count is the sum of Counts; Sum the total time of those round trips.
	Count int64
	Sum   time.Duration
}

func (h *histogram) snapshot() Latency {
	l := Latency{Bounds: slices.Clone(latencyBounds[:]), Counts: make([]int64, len(h.counts))}
	for i := range h.counts {
		l.Counts[i] = h.counts[i].Load()
		l.Count += l.Counts[i]
	}
	l.Sum = time.Duration(h.sum.Load())
	return l
}
