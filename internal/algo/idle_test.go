package algo_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hybridlimit/hybridlimit/internal/algo"
	"github.com/hybridlimit/hybridlimit/internal/limitspec"
	"github.com/hybridlimit/hybridlimit/limit"
)

// t0 is the instant the idle tests start near.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// takeUS is Spec.TakeTo returning the Decision.
func takeUS(sp *algo.Spec, s *algo.State, nowUS, cost int64) algo.Decision {
	var d algo.Decision
	sp.TakeTo(&d, s, nowUS, cost)
	return d
}

// TestIdleAtMatchesFresh checks Spec.IdleAt against the transitions: from the
// instant it returns, a state decides every request exactly as a fresh one.
func TestIdleAtMatchesFresh(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		checkIdleAt(t, r.Uint64())
	}
}

func FuzzIdleAt(f *testing.F) {
	for _, s := range []uint64{0, 1, 42, 1 << 40} {
		f.Add(s)
	}
	f.Fuzz(checkIdleAt)
}

// checkIdleAt plays a random sequence of requests against one random limit
// and, after each, compares the state at its idle time (and a little later)
// with a fresh one.
func checkIdleAt(t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, seed>>32))
	periods := []time.Duration{time.Microsecond, 7 * time.Microsecond, time.Millisecond, 1500 * time.Millisecond, time.Second, time.Minute}
	lim := limit.Limit{
		Algorithm: limit.Algorithm(r.IntN(5)),
		Rate:      1 + r.Int64N(50),
		Period:    periods[r.IntN(len(periods))],
	}
	if lim.Algorithm == limit.TokenBucket || lim.Algorithm == limit.LeakyBucket {
		lim.Burst = r.Int64N(60)
	}
	sp, err := limitspec.Of(lim)
	if err != nil {
		return
	}
	var s algo.State
	now := t0.UnixMicro() + r.Int64N(int64(lim.Period/time.Microsecond))
	for range 20 {
		now += r.Int64N(2 * int64(lim.Period/time.Microsecond))
		cost := 1 + r.Int64N(sp.C)
		takeUS(&sp, &s, now, cost)
		idle := sp.IdleAt(&s)
		if idle == 0 {
			continue
		}
		for _, at := range []int64{idle, idle + 1 + r.Int64N(3*int64(lim.Period/time.Microsecond))} {
			c := 1 + r.Int64N(sp.C)
			kept := s
			kept.Log = append([]algo.Event(nil), s.Log...)
			var fresh algo.State
			if got, want := takeUS(&sp, &kept, at, c), takeUS(&sp, &fresh, at, c); got != want {
				t.Fatalf("%v: state %+v at its idle time %d (+%d) decides %d as %+v, a fresh state as %+v", lim, s, idle, at-idle, c, got, want)
			}
		}
	}
}
