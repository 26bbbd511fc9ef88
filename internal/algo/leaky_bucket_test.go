package algo_test

import (
	"testing"
	"time"

	"github.com/hybridlimit/hybridlimit/internal/algo"
	"github.com/hybridlimit/hybridlimit/internal/limitspec"
	"github.com/hybridlimit/hybridlimit/limit"
)

// TestLongestDelayMatchesTake checks Spec.LongestDelay against the
// transitions: a request of one unit that finds the queue holding Burst-1
// units, put there by a Take at the start of a quantum, is admitted with
// that Delay; one more unit is then denied; two units on a queue of
// Burst-2, or one unit later in the quantum, wait no longer.
func TestLongestDelayMatchesTake(t *testing.T) {
	tests := []struct {
		name string
		l    limit.Limit
		q    int64 // the Spec's quantum, µs
		want time.Duration
	}{
		{"10/s burst 21", limit.Limit{Algorithm: limit.LeakyBucket, Rate: 10, Period: sec, Burst: 21}, 1, 2 * sec},
		{"10/s", limit.Limit{Algorithm: limit.LeakyBucket, Rate: 10, Period: sec}, 1, 900 * ms},
		{"3 per 7s burst 5, rounded up", limit.Limit{Algorithm: limit.LeakyBucket, Rate: 3, Period: 7 * sec, Burst: 5}, 1, 9_333_334 * µs},
		{"burst 1 never waits", limit.Limit{Algorithm: limit.LeakyBucket, Rate: 1, Period: time.Minute, Burst: 1}, 1, 0},
		{"burst below rate", limit.Limit{Algorithm: limit.LeakyBucket, Rate: 1000, Period: time.Hour, Burst: 3}, 1, 7200 * ms},
		{"quantum of 10µs", limit.Limit{Algorithm: limit.LeakyBucket, Rate: 1, Period: limit.MaxPeriod, Burst: 99}, 10, 98 * limit.MaxPeriod},
		{"quantum of 10s", limit.Limit{Algorithm: limit.LeakyBucket, Rate: maxRate, Period: 2000 * sec}, 10_000_000, 2000 * sec},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sp, err := limitspec.Of(tt.l)
			if err != nil || sp.Q != tt.q {
				t.Fatalf("limitspec.Of(%v) = %+v, %v, want Q = %d", tt.l, sp, err, tt.q)
			}
			got := sp.LongestDelay()
			if got != tt.want {
				t.Errorf("LongestDelay() of %v = %v, want %v", tt.l, got, tt.want)
			}
			start := time.UnixMicro((base.UnixMicro()/sp.Q + 1) * sp.Q)
			var s algo.State
			if c := tt.l.Capacity(); c > 1 {
				s = mustTake(t, s, tt.l, start, c-1)
			}
			next, d, err := take(clone(s), tt.l, start, 1)
			if err != nil || !d.Allowed || d.Delay != got {
				t.Fatalf("Take(%v, 1) on a queue of Burst-1 = %+v, %v, want allowed with Delay %v", tt.l, d, err, got)
			}
			if _, d, _ := take(next, tt.l, start, 1); d.Allowed {
				t.Errorf("Take(%v, 1) on a full queue = %+v, want denied", tt.l, d)
			}
			if c := tt.l.Capacity(); c > 2 {
				// Two units find at most Burst-2 ahead of them: no longer.
				s2 := mustTake(t, algo.State{}, tt.l, start, c-2)
				if _, d, _ := take(s2, tt.l, start, 2); !d.Allowed || d.Delay > got {
					t.Errorf("Take(%v, 2) on a queue of Burst-2 = %+v, want allowed with Delay at most %v", tt.l, d, got)
				}
			}
			if sp.Q > 1 {
				later := start.Add(time.Duration(sp.Q-1) * µs)
				if _, d, _ := take(clone(s), tt.l, later, 1); !d.Allowed || d.Delay > got {
					t.Errorf("Take(%v, 1) on a queue of Burst-1 later in the quantum = %+v, want allowed with Delay at most %v", tt.l, d, got)
				}
			}
			for _, a := range []limit.Algorithm{limit.TokenBucket, limit.FixedWindow, limit.SlidingWindowLog, limit.SlidingWindowCounter} {
				other := tt.l
				other.Algorithm = a
				if a != limit.TokenBucket {
					other.Burst = 0
				}
				if sp, err := limitspec.Of(other); err == nil && sp.LongestDelay() != 0 {
					t.Errorf("LongestDelay() of %v = %v, want 0", other, sp.LongestDelay())
				}
			}
		})
	}
}
