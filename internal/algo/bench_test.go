package algo_test

// The benchmarks measure the transitions alone, without a store: one
// decision against each algorithm (TakeTo), a request of two limits
// (TakeSpecsTo) and a lease and its give-back (LeaseSpecs, GiveBackSpecs).
// Every limit is 1000 per second, asked for one unit every 2 ms, so that
// every request is admitted once the state is warm and the figures are
// those of an admission. The token bucket, counted in microseconds, takes
// TakeTo's fast path; LeakyBucket shares its arithmetic through the routed
// path (dispatch.go), so the two compare the fast path with the routing:
//
//	go test -run '^$' -bench . -count 10 ./internal/algo/

import (
	"testing"
	"time"

	"github.com/hybridlimit/hybridlimit/internal/algo"
	"github.com/hybridlimit/hybridlimit/internal/limitspec"
	"github.com/hybridlimit/hybridlimit/limit"
)

// benchStep is the time between two requests in microseconds: half the
// rate of every benchmark's limit.
const benchStep = 2000

var benchAlgorithms = []limit.Algorithm{limit.TokenBucket, limit.LeakyBucket, limit.FixedWindow, limit.SlidingWindowLog, limit.SlidingWindowCounter}

func benchSpec(b *testing.B, a limit.Algorithm) algo.Spec {
	b.Helper()
	sp, err := limitspec.Of(limit.Limit{Algorithm: a, Rate: 1000, Period: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	return sp
}

func BenchmarkTakeTo(b *testing.B) {
	for _, a := range benchAlgorithms {
		b.Run("alg="+a.String(), func(b *testing.B) {
			sp := benchSpec(b, a)
			var s algo.State
			var d algo.Decision
			now := int64(1_767_225_600_000_000)
			denied := 0
			b.ReportAllocs()
			for b.Loop() {
				now += benchStep
				sp.TakeTo(&d, &s, now, 1)
				if !d.Allowed {
					denied++
				}
			}
			b.ReportMetric(float64(denied)/float64(b.N), "denied/op")
		})
	}
}

func BenchmarkTakeSpecsTo(b *testing.B) {
	for _, a := range benchAlgorithms {
		b.Run("algs=TokenBucket+"+a.String(), func(b *testing.B) {
			first := benchSpec(b, limit.TokenBucket)
			first.R, first.C = 2000, 2000 // another limit than the second
			specs := []algo.Spec{first, benchSpec(b, a)}
			var s0, s1 algo.State
			states := []*algo.State{&s0, &s1}
			var d algo.Decision
			now := int64(1_767_225_600_000_000)
			b.ReportAllocs()
			for b.Loop() {
				now += benchStep
				algo.TakeSpecsTo(&d, states, specs, now, 1)
			}
		})
	}
}

func BenchmarkLeaseGiveBack(b *testing.B) {
	for _, a := range benchAlgorithms {
		b.Run("alg="+a.String(), func(b *testing.B) {
			specs := []algo.Spec{benchSpec(b, a)}
			var s algo.State
			states := []*algo.State{&s}
			now := int64(1_767_225_600_000_000)
			b.ReportAllocs()
			for b.Loop() {
				now += benchStep
				if g, _, _ := algo.LeaseSpecs(states, specs, now, 2); g > 1 {
					algo.GiveBackSpecs(states, specs, now, now, 1)
				}
			}
		})
	}
}
