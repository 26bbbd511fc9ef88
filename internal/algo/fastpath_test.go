package algo

import (
	"math/rand/v2"
	"testing"
)

// TestTakeTokensMatchesView: the token bucket's short path gives what the
// general one gives, state and decision, over random traffic.
func TestTakeTokensMatchesView(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	// Rate, period (µs) and capacity, each with a 1 µs quantum.
	limits := []struct{ r, p, c int64 }{{10, 1e6, 10}, {100, 60e6, 100}, {3, 7000, 11}, {1 << 30, 1e6, 1 << 30}, {1, 3600e6, 1000}}
	for _, l := range limits {
		sp, ok := New(TokenBucket, l.r, l.p, l.c, false)
		if !ok || sp.Q != 1 {
			t.Fatalf("%+v: New = %+v, %v; want a 1µs quantum", l, sp, ok)
		}
		var fast, slow State
		now := int64(1_767_225_600_000_000)
		for i := 0; i < 20000; i++ {
			now += rng.Int64N(max(1, l.p/l.r*3))
			cost := 1 + rng.Int64N(sp.C)
			var got Decision
			sp.TakeTo(&got, &fast, now, cost)
			var v view
			v.look(&sp, &slow, now)
			ok := v.allows(cost)
			if ok {
				v.commit(&slow, cost)
			}
			var want Decision
			v.decide(&want, cost, ok)
			if got != want || fast.T != slow.T || fast.A != slow.A {
				t.Fatalf("%v step %d: Take = %+v state %+v, want %+v state %+v", l, i, got, fast, want, slow)
			}
		}
	}
}
