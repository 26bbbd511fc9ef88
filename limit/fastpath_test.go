package limit

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestTakeTokensMatchesView: the token bucket's short path gives what the
// general one gives, state and decision, over random traffic.
func TestTakeTokensMatchesView(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	limits := []Limit{PerSecond(10), PerMinute(100), {Rate: 3, Period: 7 * time.Millisecond, Burst: 11}, PerSecond(1 << 30), {Rate: 1, Period: time.Hour, Burst: 1000}}
	for _, l := range limits {
		sp, err := l.Spec()
		if err != nil || sp.Q != 1 {
			t.Fatalf("%v: Spec = %+v, %v; want a 1µs quantum", l, sp, err)
		}
		var fast, slow State
		now := int64(1_767_225_600_000_000)
		for i := 0; i < 20000; i++ {
			now += rng.Int64N(max(1, int64(l.Period/time.Microsecond)/l.Rate*3))
			cost := 1 + rng.Int64N(sp.C)
			got := sp.Take(&fast, now, cost)
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
