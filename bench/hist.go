package main

import (
	"math"
	"math/bits"
	"time"
)

// Latencies are counted in a log-linear histogram: 8 bins per power of
// two of nanoseconds, so a percentile read from it is within about 9% of
// the exact one, in fixed memory whatever the number of decisions.
const (
	histSub     = 3 // log2 of the bins per power of two
	histOctaves = 40
	histBins    = histOctaves << histSub // up to 2^40 ns, about 18 minutes
)

// hist counts latencies. It is not safe for concurrent use: each
// goroutine counts into its own and they are merged at the end.
type hist struct {
	n    int64
	bins [histBins]uint32
}

// binOf returns the bin of a duration.
func binOf(d time.Duration) int {
	ns := uint64(max(d, 0))
	if ns < 1<<histSub {
		return int(ns)
	}
	e := bits.Len64(ns) - 1 // ns is in [2^e, 2^(e+1))
	i := (e-histSub+1)<<histSub + int(ns>>(e-histSub))&(1<<histSub-1)
	return min(i, histBins-1)
}

// binValue returns the middle of bin i, in nanoseconds.
func binValue(i int) float64 {
	if i < 1<<histSub {
		return float64(i)
	}
	e := i>>histSub + histSub - 1
	lo := float64(uint64(1)<<e) * (1 + float64(i&(1<<histSub-1))/(1<<histSub))
	width := math.Ldexp(1, e-histSub)
	return lo + width/2
}

func (h *hist) add(d time.Duration) {
	b := binOf(d)
	if h.bins[b] < math.MaxUint32 {
		h.bins[b]++
		h.n++
	}
}

func (h *hist) merge(o *hist) {
	for i, c := range o.bins {
		h.bins[i] += c
	}
	h.n += o.n
}

// quantile returns the q-quantile (0 < q < 1) in microseconds, or 0 for
// an empty histogram.
func (h *hist) quantile(q float64) float64 {
	if h.n == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(h.n)))
	rank = min(max(rank, 1), h.n)
	var seen int64
	for i, c := range h.bins {
		seen += int64(c)
		if seen >= rank {
			return binValue(i) / 1e3
		}
	}
	return binValue(histBins-1) / 1e3
}
