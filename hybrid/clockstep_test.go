package hybrid

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestClockStepsThroughTheFacade: a key that used its limit is not locked
// out when the Redis server's clock steps back an hour (or forward and
// back): the first request after the step is told a truthful RetryAfter of
// at most three periods, and passes then, under every algorithm (the semantics are package limit's; this checks the facade
// end to end on miniredis with its clock set).
func TestClockStepsThroughTheFacade(t *testing.T) {
	algs := []Algorithm{TokenBucket, LeakyBucket, FixedWindow, SlidingWindowLog, SlidingWindowCounter}
	for _, alg := range algs {
		for _, step := range []time.Duration{-time.Hour, time.Hour} {
			t.Run(fmt.Sprintf("%v/%v", alg, step), func(t *testing.T) {
				lim, ms := newMini(t, 1, Config{DenyCache: DenyCacheConfig{Disable: true}, Lease: LeaseConfig{Disable: true}})
				m := ms[0]
				t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
				m.SetTime(t0)
				l := Limit{Algorithm: alg, Rate: 5, Period: time.Second}
				ctx := context.Background()
				for i := range 5 {
					if r, _ := lim.Allow(ctx, "k", l); !r.Allowed {
						t.Fatalf("request %d of 5 denied", i+1)
					}
				}
				if r, _ := lim.Allow(ctx, "k", l); r.Allowed && alg != LeakyBucket {
					t.Fatalf("sixth request allowed")
				}
				at := t0.Add(step)
				if step > 0 {
					// Forward, a request, then back: the state is now ahead.
					m.SetTime(at)
					lim.Allow(ctx, "k", l)
					at = t0
				}
				m.SetTime(at)
				r, err := lim.Allow(ctx, "k", l) // the first request after the step
				if err != nil {
					t.Fatal(err)
				}
				// RetryAfter is truthful: a request then passes, and the
				// wait is no longer than a fresh key's worst (two periods
				// for a sliding window counter) plus one period.
				if !r.Allowed {
					if r.RetryAfter > 3*l.Period {
						t.Errorf("after a clock step of %v: RetryAfter %v, want <= 3 periods", step, r.RetryAfter)
					}
					m.SetTime(at.Add(r.RetryAfter))
					if r2, err := lim.Allow(ctx, "k", l); err != nil || !r2.Allowed {
						t.Errorf("after a clock step of %v, at RetryAfter %v: %+v, %v; want allowed", step, r.RetryAfter, r2, err)
					}
				}
			})
		}
	}
}
