package remote

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hybridlimit/hybridlimit/internal/conformance"
	"github.com/hybridlimit/hybridlimit/limit"
)

// limitSets are the requests the differential test draws from. Sets share
// limits, so one Redis key is charged through several sets, as in use.
var limitSets = [][]limit.Limit{
	{limit.PerSecond(5)},
	{{Algorithm: limit.TokenBucket, Rate: 3, Period: 100 * time.Millisecond, Burst: 7}},
	{{Algorithm: limit.LeakyBucket, Rate: 4, Period: time.Second, Burst: 4}},
	{{Algorithm: limit.FixedWindow, Rate: 5, Period: time.Second}},
	{{Algorithm: limit.SlidingWindowLog, Rate: 6, Period: time.Second}},
	{{Algorithm: limit.SlidingWindowCounter, Rate: 7, Period: time.Second}},
	{{Algorithm: limit.SlidingWindowCounter, Rate: 100, Period: time.Minute}},
	{limit.PerSecond(5), {Algorithm: limit.FixedWindow, Rate: 5, Period: time.Second}},
	{{Algorithm: limit.SlidingWindowLog, Rate: 6, Period: time.Second}, limit.PerHour(40)},
	{{Algorithm: limit.LeakyBucket, Rate: 4, Period: time.Second, Burst: 4}, {Algorithm: limit.SlidingWindowCounter, Rate: 7, Period: time.Second}, limit.PerHour(40)},
}

type refKey struct {
	key string
	l   limit.Limit
}

// reference is package limit keeping state the way Redis does: one state
// per (key, limit), whatever set it is charged through.
type reference map[refKey]*limit.State

func (r reference) states(key string, limits []limit.Limit) ([]*limit.State, []limit.Spec) {
	st := make([]*limit.State, len(limits))
	sp := make([]limit.Spec, len(limits))
	for i, l := range limits {
		k := refKey{key, l}
		if r[k] == nil {
			r[k] = new(limit.State)
		}
		st[i] = r[k]
		sp[i], _ = l.Spec()
	}
	return st, sp
}

type heldLease struct {
	key   string
	set   int
	at    int64
	units int64
}

// runDifferential drives random decisions, leases and give-backs through s
// and through package limit, and requires identical answers. back allows
// the clock to step backwards, by a little and by an hour, and forward by
// an hour.
func runDifferential(t *testing.T, s *Store, c clock, seed uint64, ops int, back bool) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 7))
	ref := reference{}
	keys := []string{"a", "b", "user:42"}
	now := conformance.Base
	var leases []heldLease
	for op := 0; op < ops; op++ {
		switch x := rng.IntN(100); {
		case x < 5:
			now = now.Add(time.Duration(rng.IntN(20)) * time.Second)
		case x < 10 && back:
			now = now.Add(-time.Duration(rng.IntN(50_000)) * time.Microsecond)
		case x < 12 && back:
			// A step of about an hour either way, as NTP or a failover to
			// a replica steps a server's clock.
			step := time.Hour - time.Duration(rng.IntN(1000))*time.Millisecond
			if rng.IntN(2) == 0 {
				step = -step
			}
			now = now.Add(step)
		case x < 30:
			// same microsecond
		default:
			now = now.Add(time.Duration(rng.IntN(300_000)) * time.Microsecond)
		}
		c.set(t, now)
		key := keys[rng.IntN(len(keys))]
		set := rng.IntN(len(limitSets))
		limits := limitSets[set]
		states, specs := ref.states(key, limits)
		switch x := rng.IntN(10); {
		case x < 6:
			minCap := limits[0].Capacity()
			for _, l := range limits {
				minCap = min(minCap, l.Capacity())
			}
			cost := 1 + rng.Int64N(minCap+1)
			got, gb, err := s.Decide(ctx, key, cost, limits...)
			if cost > minCap {
				if !errors.Is(err, limit.ErrCostExceedsLimit) {
					t.Fatalf("op %d: Decide(%s, %d, set %d) error = %v, want ErrCostExceedsLimit", op, key, cost, set, err)
				}
				continue
			}
			want, wb := limit.TakeSpecs(states, specs, now.UnixMicro(), cost)
			if err != nil || got != want || gb != wb {
				t.Fatalf("op %d at %v: Decide(%s, %d, set %d) = %+v binding %d, %v; want %+v binding %d",
					op, now.Sub(conformance.Base), key, cost, set, got, gb, err, want, wb)
			}
		case x < 8:
			want := 1 + rng.Int64N(6)
			got, err := s.Lease(ctx, key, want, limits...)
			if err != nil {
				t.Fatalf("op %d: Lease(%s, %d, set %d) error = %v", op, key, want, set, err)
			}
			g, d := limit.LeaseSpecs(states, specs, now.UnixMicro(), want)
			if got.Granted != g || got.Decision != d || got.At != now.UnixMicro() {
				t.Fatalf("op %d at %v: Lease(%s, %d, set %d) = %+v, want granted %d %+v at %d",
					op, now.Sub(conformance.Base), key, want, set, got, g, d, now.UnixMicro())
			}
			if g > 0 {
				leases = append(leases, heldLease{key, set, got.At, g})
			}
		default:
			if len(leases) == 0 {
				continue
			}
			i := rng.IntN(len(leases))
			l := leases[i]
			leases = append(leases[:i], leases[i+1:]...)
			units := 1 + rng.Int64N(l.units)
			if err := s.GiveBack(ctx, l.key, l.at, units, limitSets[l.set]...); err != nil {
				t.Fatalf("op %d: GiveBack error = %v", op, err)
			}
			st, sp := ref.states(l.key, limitSets[l.set])
			limit.GiveBackSpecs(st, sp, now.UnixMicro(), l.at, units)
		}
	}
}

// TestDifferentialMiniredis compares the scripts on miniredis with package
// limit over random traffic, time only moving forward (miniredis expires
// keys by FastForward, which cannot be undone).
func TestDifferentialMiniredis(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		s, _, c := newMini(t)
		runDifferential(t, s, c, seed, 1500, false)
	}
}

// TestDifferentialRedis does the same on real redis-server, with the clock
// also stepping backwards and by an hour (the test clock never expires a
// key, as real Redis keeps a key whose expiry the stepped-back clock has
// not reached).
func TestDifferentialRedis(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		s, _, c := newReal(t)
		runDifferential(t, s, c, seed, 1500, true)
	}
}
