package remote

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hybridlimit/hybridlimit/internal/algo"
	"github.com/hybridlimit/hybridlimit/internal/limitspec"
	"github.com/hybridlimit/hybridlimit/internal/testkit/conformance"
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
	// Token and leaky buckets alone, decided in one step (TB.take_all):
	// 100/min and 1000/hour in small, and leaky buckets with them.
	{limit.PerSecond(5), limit.PerHour(40)},
	{{Algorithm: limit.LeakyBucket, Rate: 4, Period: time.Second, Burst: 4}, limit.PerHour(40)},
	{{Algorithm: limit.LeakyBucket, Rate: 4, Period: time.Second, Burst: 4}, {Algorithm: limit.LeakyBucket, Rate: 30, Period: time.Minute, Burst: 2}},
	{{Algorithm: limit.TokenBucket, Rate: 3, Period: 100 * time.Millisecond, Burst: 7}, limit.PerSecond(5), limit.PerHour(40)},
	// Named limits whose rate, period or burst differs from set to set:
	// each meets its state written for another, and converts it.
	{{Rate: 5, Period: time.Second, Name: "n"}},
	{{Rate: 8, Period: time.Second, Burst: 3, Name: "n"}},
	{{Rate: 2, Period: 100 * time.Millisecond, Name: "n"}},
	{{Algorithm: limit.LeakyBucket, Rate: 4, Period: time.Second, Burst: 4, Name: "q"}},
	{{Algorithm: limit.LeakyBucket, Rate: 2, Period: time.Second, Burst: 6, Name: "q"}},
	{{Algorithm: limit.FixedWindow, Rate: 5, Period: time.Second, Name: "w"}},
	{{Algorithm: limit.FixedWindow, Rate: 3, Period: 500 * time.Millisecond, Name: "w"}},
	{{Algorithm: limit.SlidingWindowLog, Rate: 6, Period: time.Second, Name: "l"}},
	{{Algorithm: limit.SlidingWindowLog, Rate: 3, Period: 2 * time.Second, Name: "l"}},
	{{Algorithm: limit.SlidingWindowCounter, Rate: 7, Period: time.Second, Name: "c"}},
	{{Algorithm: limit.SlidingWindowCounter, Rate: 100, Period: time.Minute, Name: "c"}},
	{{Rate: 3, Period: time.Second, Name: "n"}, {Algorithm: limit.FixedWindow, Rate: 4, Period: time.Second, Name: "w"}},
}

type refKey struct {
	key string
	l   limit.Limit // a named limit's name and algorithm only
}

// refState is a state and the Spec it was written for.
type refState struct {
	spec algo.Spec
	st   algo.State
}

// reference is the transitions of package limit (internal/algo) keeping
// state the way Redis does: one state per (key, limit), whatever set it is
// charged through; for a named limit one per (key, name, algorithm),
// converted (algo.Spec.Convert) when a
// set with another limit of the name meets it.
type reference map[refKey]*refState

// states returns the states and specs of limits for key at nowUS. A named
// state written for another limit is converted when convert is set, and
// otherwise left out (GiveBack skips it).
func (r reference) states(key string, limits []limit.Limit, nowUS int64, convert bool) ([]*algo.State, []algo.Spec) {
	var st []*algo.State
	var sps []algo.Spec
	for _, l := range limits {
		id := l
		if l.Name != "" {
			id = limit.Limit{Algorithm: l.Algorithm, Name: l.Name}
		}
		sp := limitspec.Valid(l)
		k := refKey{key, id}
		rs := r[k]
		if rs == nil {
			rs = &refState{spec: sp}
			r[k] = rs
		}
		if rs.spec != sp {
			if !convert {
				continue
			}
			sp.Convert(&rs.spec, &rs.st, nowUS)
			rs.spec = sp
		}
		st = append(st, &rs.st)
		sps = append(sps, sp)
	}
	return st, sps
}

type heldLease struct {
	key   string
	set   int
	at    int64
	units int64
}

// runDifferential drives random decisions, leases, give-backs, peeks,
// refunds and resets through s and through the transitions of package
// limit, and requires identical answers. back allows the clock to step
// backwards, by a little and by an hour, and forward by an hour.
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
		switch x := rng.IntN(13); {
		case x < 6:
			minCap := limits[0].Capacity()
			for _, l := range limits {
				minCap = min(minCap, l.Capacity())
			}
			cost := 1 + rng.Int64N(minCap+1)
			got, gb, err := s.decide(ctx, key, cost, limits...)
			if cost > minCap {
				if !errors.Is(err, limit.ErrCostExceedsLimit) {
					t.Fatalf("op %d: Decide(%s, %d, set %d) error = %v, want ErrCostExceedsLimit", op, key, cost, set, err)
				}
				continue
			}
			states, specs := ref.states(key, limits, now.UnixMicro(), true)
			var want limit.Decision
			wb := algo.TakeSpecsTo(limitspec.Decision(&want), states, specs, now.UnixMicro(), cost)
			if err != nil || got != want || gb != wb {
				t.Fatalf("op %d at %v: Decide(%s, %d, set %d) = %+v binding %d, %v; want %+v binding %d",
					op, now.Sub(conformance.Base), key, cost, set, got, gb, err, want, wb)
			}
		case x < 8:
			want := 1 + rng.Int64N(6)
			got, err := s.lease(ctx, key, want, limits...)
			if err != nil {
				t.Fatalf("op %d: Lease(%s, %d, set %d) error = %v", op, key, want, set, err)
			}
			states, specs := ref.states(key, limits, now.UnixMicro(), true)
			g, ad, _ := algo.LeaseSpecs(states, specs, now.UnixMicro(), want)
			d := limit.Decision(ad)
			if got.Granted != g || got.Decision != d || got.At != now.UnixMicro() {
				t.Fatalf("op %d at %v: Lease(%s, %d, set %d) = %+v, want granted %d %+v at %d",
					op, now.Sub(conformance.Base), key, want, set, got, g, d, now.UnixMicro())
			}
			if g > 0 {
				leases = append(leases, heldLease{key, set, got.At, g})
			}
		case x == 10:
			got, err := s.peek(ctx, key, limits...)
			states, specs := ref.states(key, limits, now.UnixMicro(), true)
			var want limit.Decision
			wb := algo.PeekSpecs(limitspec.Decision(&want), states, specs, now.UnixMicro(), 1)
			if err != nil || got.Decision != want || got.Binding != wb {
				t.Fatalf("op %d at %v: Peek(%s, set %d) = %+v, %v; want %+v binding %d",
					op, now.Sub(conformance.Base), key, set, got, err, want, wb)
			}
		case x == 11:
			units := 1 + rng.Int64N(4)
			if err := s.refund(ctx, key, units, limits...); err != nil {
				t.Fatalf("op %d: Refund error = %v", op, err)
			}
			if st, sp := ref.states(key, limits, now.UnixMicro(), false); len(st) > 0 {
				algo.RefundSpecs(st, sp, now.UnixMicro(), units)
			}
		case x == 12 && rng.IntN(4) == 0:
			if err := s.reset(ctx, key, limits...); err != nil {
				t.Fatalf("op %d: Reset error = %v", op, err)
			}
			for _, l := range limits {
				id := l
				if l.Name != "" {
					id = limit.Limit{Algorithm: l.Algorithm, Name: l.Name}
				}
				delete(ref, refKey{key, id})
			}
		case x >= 8 && x < 10:
			if len(leases) == 0 {
				continue
			}
			i := rng.IntN(len(leases))
			l := leases[i]
			leases = append(leases[:i], leases[i+1:]...)
			units := 1 + rng.Int64N(l.units)
			if err := s.giveBack(ctx, l.key, l.at, units, limitSets[l.set]...); err != nil {
				t.Fatalf("op %d: GiveBack error = %v", op, err)
			}
			if st, sp := ref.states(l.key, limitSets[l.set], now.UnixMicro(), false); len(st) > 0 {
				algo.GiveBackSpecs(st, sp, now.UnixMicro(), l.at, units)
			}
		}
	}
}

// TestDifferentialMiniredis compares the scripts on miniredis with package
// limit over random traffic, time only moving forward (miniredis expires
// keys by FastForward, which cannot be undone).
func TestDifferentialMiniredis(t *testing.T) {
	for _, lt := range layouts {
		t.Run(lt.name, func(t *testing.T) {
			for seed := uint64(1); seed <= 4; seed++ {
				s, _, c := newMiniIn(t, lt.l)
				runDifferential(t, s, c, seed, 1500, false)
			}
		})
	}
}

// TestDifferentialRedis does the same on real redis-server, with the clock
// also stepping backwards and by an hour (the test clock never expires a
// key, as real Redis keeps a key whose expiry the stepped-back clock has
// not reached).
func TestDifferentialRedis(t *testing.T) {
	for _, lt := range layouts {
		for _, m := range realModes {
			t.Run(lt.name+"/"+m.name, func(t *testing.T) {
				for seed := uint64(1); seed <= 4; seed++ {
					s, _, c := newRealModeIn(t, m.fn, lt.l)
					runDifferential(t, s, c, seed, 1500, true)
				}
			})
		}
	}
}
