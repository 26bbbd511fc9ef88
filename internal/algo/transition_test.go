package algo_test

import (
	"errors"
	"math/bits"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/hybridlimit/hybridlimit/internal/algo"
	"github.com/hybridlimit/hybridlimit/internal/limitspec"
	"github.com/hybridlimit/hybridlimit/limit"
)

// base is the instant the tests count from: a whole day of Unix time, so
// windows of a second, a minute or an hour start on it.
var base = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const (
	µs      = time.Microsecond
	ms      = time.Millisecond
	sec     = time.Second
	maxRate = int64(limit.MaxRate)
)

// algorithms lists the five algorithms.
var algorithms = []limit.Algorithm{
	limit.TokenBucket,
	limit.LeakyBucket,
	limit.FixedWindow,
	limit.SlidingWindowLog,
	limit.SlidingWindowCounter,
}

// clone returns a copy of s that shares no event storage with it, keeping a
// nil Log nil.
func clone(s algo.State) algo.State {
	if s.Log != nil {
		s.Log = slices.Clone(s.Log)
	}
	return s
}

func cloneAll(states []algo.State) []algo.State {
	out := make([]algo.State, len(states))
	for i, s := range states {
		out[i] = clone(s)
	}
	return out
}

// available returns how many units l admits at now from s, without changing
// s: Remaining+1 after an allowed probe of one unit, else the denial's
// Remaining (0).
func available(t testing.TB, s algo.State, l limit.Limit, now time.Time) int64 {
	t.Helper()
	_, d, err := take(clone(s), l, now, 1)
	if err != nil {
		t.Fatalf("Take(%v, at %v, cost 1) error = %v", l, now.Sub(base), err)
	}
	if !d.Allowed {
		return d.Remaining
	}
	return d.Remaining + 1
}

// mustTake takes cost from s and fails the test on an error or a denial.
func mustTake(t *testing.T, s algo.State, l limit.Limit, now time.Time, cost int64) algo.State {
	t.Helper()
	next, d, err := take(s, l, now, cost)
	if err != nil || !d.Allowed {
		t.Fatalf("Take(%v, at %v, cost %d) = %+v, %v, want allowed", l, now.Sub(base), cost, d, err)
	}
	return next
}

func mustSpec(t testing.TB, l limit.Limit) algo.Spec {
	t.Helper()
	sp, err := limitspec.Of(l)
	if err != nil {
		t.Fatalf("limitspec.Of(%v) error = %v", l, err)
	}
	return sp
}

// productFits reports whether a*b <= 2^50 for non-negative a and b.
func productFits(a, b int64) bool {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	return hi == 0 && lo <= 1<<50
}

func TestSpec(t *testing.T) {
	tests := []struct {
		name string
		l    limit.Limit
		want algo.Spec
	}{
		{"PerSecond(10)", limit.PerSecond(10),
			algo.Spec{Algorithm: algo.TokenBucket, Q: 1, P: 1_000_000, R: 10, C: 10}},
		{"PerSecond(MaxRate)", limit.PerSecond(maxRate),
			algo.Spec{Algorithm: algo.TokenBucket, Q: 1000, P: 1000, R: maxRate, C: maxRate}},
		{"1000 per MaxPeriod", limit.Limit{Rate: 1000, Period: limit.MaxPeriod},
			algo.Spec{Algorithm: algo.TokenBucket, Q: 100, P: 316_224_000_000, R: 1000, C: 1000}},
		{"MaxRate per 1000s", limit.Limit{Rate: maxRate, Period: 1000 * sec},
			algo.Spec{Algorithm: algo.TokenBucket, Q: 1_000_000, P: 1000, R: maxRate, C: maxRate}},
		{"MaxRate per 2000s", limit.Limit{Rate: maxRate, Period: 2000 * sec},
			algo.Spec{Algorithm: algo.TokenBucket, Q: 10_000_000, P: 200, R: maxRate, C: maxRate}},
		{"1 per µs", limit.Limit{Rate: 1, Period: µs},
			algo.Spec{Algorithm: algo.TokenBucket, Q: 1, P: 1, R: 1, C: 1}},
		{"burst above rate", limit.Limit{Rate: 1, Period: sec, Burst: 3},
			algo.Spec{Algorithm: algo.TokenBucket, Q: 1, P: 1_000_000, R: 1, C: 3}},
		{"burst below rate", limit.Limit{Algorithm: limit.LeakyBucket, Rate: 10, Period: sec, Burst: 3},
			algo.Spec{Algorithm: algo.LeakyBucket, Q: 1, P: 1_000_000, R: 10, C: 3}},
		// 99 units at 1 per 366 days refill in 36234 days, within MaxFill.
		{"refill just within MaxFill", limit.Limit{Algorithm: limit.LeakyBucket, Rate: 1, Period: limit.MaxPeriod, Burst: 99},
			algo.Spec{Algorithm: algo.LeakyBucket, Q: 10, P: 3_162_240_000_000, R: 1, C: 99}},
		{"burst MaxRate", limit.Limit{Rate: maxRate, Period: sec, Burst: maxRate},
			algo.Spec{Algorithm: algo.TokenBucket, Q: 1000, P: 1000, R: maxRate, C: maxRate}},
		// The window algorithms form no product of a count and a period.
		{"FixedWindow MaxRate per MaxPeriod", limit.Limit{Algorithm: limit.FixedWindow, Rate: maxRate, Period: limit.MaxPeriod},
			algo.Spec{Algorithm: algo.FixedWindow, Q: 1, P: 31_622_400_000_000, R: maxRate, C: maxRate}},
		{"FixedWindow burst equal to rate", limit.Limit{Algorithm: limit.FixedWindow, Rate: 10, Period: sec, Burst: 10},
			algo.Spec{Algorithm: algo.FixedWindow, Q: 1, P: 1_000_000, R: 10, C: 10}},
		{"SlidingWindowLog MaxLogRate", limit.Limit{Algorithm: limit.SlidingWindowLog, Rate: limit.MaxLogRate, Period: limit.MaxPeriod},
			algo.Spec{Algorithm: algo.SlidingWindowLog, Q: 1, P: 31_622_400_000_000, R: limit.MaxLogRate, C: limit.MaxLogRate}},
		{"SlidingWindowCounter MaxRate per second", limit.Limit{Algorithm: limit.SlidingWindowCounter, Rate: maxRate, Period: sec},
			algo.Spec{Algorithm: algo.SlidingWindowCounter, Q: 1000, P: 1000, R: maxRate, C: maxRate}},
		{"SlidingWindowCounter 1000 per MaxPeriod", limit.Limit{Algorithm: limit.SlidingWindowCounter, Rate: 1000, Period: limit.MaxPeriod, Burst: 1000},
			algo.Spec{Algorithm: algo.SlidingWindowCounter, Q: 100, P: 316_224_000_000, R: 1000, C: 1000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := limitspec.Of(tt.l)
			if err != nil {
				t.Fatalf("limitspec.Of(%v) error = %v", tt.l, err)
			}
			if got != tt.want {
				t.Errorf("limitspec.Of(%v) = %+v, want %+v", tt.l, got, tt.want)
			}
			if err := tt.l.Validate(); err != nil {
				t.Errorf("%v.Validate() = %v, want nil", tt.l, err)
			}
			if got.P*got.Q != tt.l.Period.Microseconds() {
				t.Errorf("limitspec.Of(%v): P*Q = %d, want the period %d µs", tt.l, got.P*got.Q, tt.l.Period.Microseconds())
			}
			switch tt.l.Algorithm {
			case limit.TokenBucket, limit.LeakyBucket, limit.SlidingWindowCounter:
				if !productFits(got.C, got.P) {
					t.Errorf("limitspec.Of(%v): C*P = %d*%d, want <= 2^50", tt.l, got.C, got.P)
				}
			}
		})
	}
}

// TestSpecProductBound checks C*P <= 2^50 over a grid of limits for the
// algorithms whose transitions form that product.
func TestSpecProductBound(t *testing.T) {
	rates := []int64{1, 3, 10, 999, 1000, 1001, 1 << 20, 1 << 30, 1<<40 - 1, maxRate}
	periods := []time.Duration{µs, 7 * µs, 10 * µs, ms, 1025 * µs, sec, 1500 * ms, time.Minute, time.Hour, 24 * time.Hour, limit.MaxPeriod - µs, limit.MaxPeriod}
	for _, a := range []limit.Algorithm{limit.TokenBucket, limit.LeakyBucket, limit.SlidingWindowCounter} {
		for _, r := range rates {
			for _, p := range periods {
				for _, b := range []int64{0, 1, r, maxRate} {
					l := limit.Limit{Algorithm: a, Rate: r, Period: p, Burst: b}
					sp, err := limitspec.Of(l)
					if err != nil {
						if !errors.Is(err, limit.ErrInvalidLimit) {
							t.Errorf("limitspec.Of(%v) error = %v, want %v", l, err, limit.ErrInvalidLimit)
						}
						continue
					}
					if !productFits(sp.C, sp.P) || sp.P*sp.Q != p.Microseconds() {
						t.Errorf("limitspec.Of(%v) = %+v, want C*P <= 2^50 and P*Q = %d", l, sp, p.Microseconds())
					}
				}
			}
		}
	}
}

func TestAlgorithm(t *testing.T) {
	tests := []struct {
		a     limit.Algorithm
		name  string
		code  string
		valid bool
	}{
		{limit.TokenBucket, "TokenBucket", "tb", true},
		{limit.LeakyBucket, "LeakyBucket", "lb", true},
		{limit.FixedWindow, "FixedWindow", "fw", true},
		{limit.SlidingWindowLog, "SlidingWindowLog", "swl", true},
		{limit.SlidingWindowCounter, "SlidingWindowCounter", "swc", true},
		{5, "Algorithm(5)", "", false},
		{255, "Algorithm(255)", "", false},
	}
	for _, tt := range tests {
		if got := tt.a.String(); got != tt.name {
			t.Errorf("Algorithm(%d).String() = %q, want %q", uint8(tt.a), got, tt.name)
		}
		if got := algo.ID(tt.a).Code(); got != tt.code {
			t.Errorf("%v.Code() = %q, want %q", tt.a, got, tt.code)
		}
		if got := tt.a.Valid(); got != tt.valid {
			t.Errorf("%v.Valid() = %v, want %v", tt.a, got, tt.valid)
		}
	}
	var zero limit.Algorithm
	if zero != limit.TokenBucket {
		t.Errorf("zero Algorithm = %v, want TokenBucket", zero)
	}
}

func TestTakeAllOneDenies(t *testing.T) {
	for _, a := range algorithms {
		t.Run(a.String(), func(t *testing.T) {
			// The first limit of each pair has room; the second, of
			// algorithm a, is exhausted.
			limits := []limit.Limit{
				{Algorithm: limit.SlidingWindowLog, Rate: 100, Period: time.Minute},
				{Algorithm: a, Rate: 3, Period: sec},
				limit.PerHour(1000),
			}
			states := make([]algo.State, len(limits))
			if _, _, err := takeAll(states, limits, base, 3); err != nil {
				t.Fatalf("TakeAll(cost 3) error = %v", err)
			}
			before := cloneAll(states)
			now := base.Add(10 * ms)
			d, b, err := takeAll(states, limits, now, 1)
			if err != nil || d.Allowed || b != 1 {
				t.Fatalf("TakeAll(%v, cost 1) = %+v, binding %d, %v, want denied by limit 1", limits, d, b, err)
			}
			if !reflect.DeepEqual(states, before) {
				t.Errorf("denied TakeAll changed the states to %+v, want %+v", states, before)
			}
			// The decision is the denying limit's own.
			_, want, _ := take(clone(before[1]), limits[1], now, 1)
			if d != want {
				t.Errorf("TakeAll(%v, cost 1) = %+v, want %+v (Take on limit 1 alone)", limits, d, want)
			}
			// A limit of no room at all still charges nothing elsewhere.
			if av := available(t, states[0], limits[0], now); av != 97 {
				t.Errorf("limit 0 admits %d after the denial, want 97", av)
			}
		})
	}
}

func TestTakeAllChargesEveryLimit(t *testing.T) {
	limits := []limit.Limit{limit.PerMinute(100), limit.PerHour(1000), {Algorithm: limit.LeakyBucket, Rate: 10, Period: sec, Burst: 20}}
	states := make([]algo.State, len(limits))
	d, b, err := takeAll(states, limits, base, 5)
	if err != nil || !d.Allowed {
		t.Fatalf("TakeAll(cost 5) = %+v, %v, want allowed", d, err)
	}
	if b != 2 || d.Remaining != 15 {
		t.Errorf("TakeAll(cost 5) = %+v, binding %d, want binding 2 with Remaining 15", d, b)
	}
	for i, l := range limits {
		if got, want := available(t, states[i], l, base), l.Capacity()-5; got != want {
			t.Errorf("limit %d (%v) admits %d after TakeAll(cost 5), want %d", i, l, got, want)
		}
	}
	d, _, _ = takeAll(states, limits, base, 1)
	if d.Delay != 500*ms {
		t.Errorf("second TakeAll Delay = %v, want 500ms (the leaky bucket's)", d.Delay)
	}
}

func specsOf(t *testing.T, limits []limit.Limit) []algo.Spec {
	t.Helper()
	specs := make([]algo.Spec, len(limits))
	for i, l := range limits {
		specs[i] = mustSpec(t, l)
	}
	return specs
}

func ptrs(states []algo.State) []*algo.State {
	p := make([]*algo.State, len(states))
	for i := range states {
		p[i] = &states[i]
	}
	return p
}

func TestLeaseSpecs(t *testing.T) {
	for _, a := range algorithms {
		t.Run(a.String(), func(t *testing.T) {
			limits := []limit.Limit{
				{Algorithm: a, Rate: 10, Period: sec},
				{Algorithm: limit.FixedWindow, Rate: 6, Period: time.Minute},
			}
			specs := specsOf(t, limits)
			states := make([]algo.State, len(limits))
			now := base.Add(ms)
			nowUS := now.UnixMicro()
			// want within both: granted in full.
			g, d, _ := leaseSpecs(ptrs(states), specs, nowUS, 3)
			if g != 3 || !d.Allowed || d.Remaining != 3 {
				t.Fatalf("LeaseSpecs(want 3) = %d, %+v, want 3 with Remaining 3", g, d)
			}
			// Available now: 7 of the first, 3 of the second.
			g, d, _ = leaseSpecs(ptrs(states), specs, nowUS, 100)
			if g != 3 || !d.Allowed || d.Remaining != 0 {
				t.Fatalf("LeaseSpecs(want 100) = %d, %+v, want min(100, 7, 3) = 3 with Remaining 0", g, d)
			}
			for i, want := range []int64{4, 0} {
				if got := available(t, states[i], limits[i], now); got != want {
					t.Errorf("limit %d admits %d after leasing 6, want %d", i, got, want)
				}
			}
			// The second is exhausted: nothing granted, nothing charged.
			before := cloneAll(states)
			g, d, _ = leaseSpecs(ptrs(states), specs, nowUS, 1)
			if g != 0 || d.Allowed || d.RetryAfter <= 0 {
				t.Errorf("LeaseSpecs(want 1) on an exhausted limit = %d, %+v, want 0, denied with RetryAfter > 0", g, d)
			}
			if !reflect.DeepEqual(states, before) {
				t.Errorf("LeaseSpecs granting 0 changed the states to %+v, want %+v", states, before)
			}
			// want 0 grants and charges nothing either.
			states2 := make([]algo.State, len(limits))
			if g, _, _ := leaseSpecs(ptrs(states2), specs, nowUS, 0); g != 0 || !reflect.DeepEqual(states2, make([]algo.State, len(limits))) {
				t.Errorf("LeaseSpecs(want 0) = %d, states %+v, want 0 and zero states", g, states2)
			}
		})
	}
}

func TestGiveBackSpecs(t *testing.T) {
	for _, a := range algorithms {
		t.Run(a.String(), func(t *testing.T) {
			l := limit.Limit{Algorithm: a, Rate: 10, Period: sec}
			specs := []algo.Spec{mustSpec(t, l)}
			check := func(s algo.State, now time.Time, want int64, what string) {
				t.Helper()
				if got := available(t, s, l, now); got != want {
					t.Errorf("%s: %v admits %d, want %d", what, l, got, want)
				}
			}
			// A state never seen stays full.
			var fresh algo.State
			algo.GiveBackSpecs([]*algo.State{&fresh}, specs, base.UnixMicro(), base.UnixMicro(), 5)
			check(fresh, base, 10, "give back 5 to a fresh state")

			states := make([]algo.State, 1)
			leaseAt := base.Add(100 * ms)
			g, _, _ := leaseSpecs(ptrs(states), specs, leaseAt.UnixMicro(), 4)
			if g != 4 {
				t.Fatalf("LeaseSpecs(want 4) = %d, want 4", g)
			}
			now := leaseAt.Add(µs)
			check(states[0], now, 6, "after leasing 4")
			algo.GiveBackSpecs(ptrs(states), specs, now.UnixMicro(), leaseAt.UnixMicro(), 3)
			check(states[0], now, 9, "after giving back 3")
			algo.GiveBackSpecs(ptrs(states), specs, now.UnixMicro(), leaseAt.UnixMicro(), 100)
			check(states[0], now, 10, "after giving back 100")
			algo.GiveBackSpecs(ptrs(states), specs, now.UnixMicro(), leaseAt.UnixMicro(), 100)
			check(states[0], now, 10, "after giving back 100 again")
			// Full again: the whole capacity can be taken, no more.
			s := mustTake(t, states[0], l, now, 10)
			if _, d, _ := take(clone(s), l, now, 1); d.Allowed {
				t.Errorf("Take(cost 1) after taking 10 of a given-back state = %+v, want denied", d)
			}
		})
	}
}

func TestGiveBackSpecsLogKeepsEarlierEvents(t *testing.T) {
	l := limit.Limit{Algorithm: limit.SlidingWindowLog, Rate: 10, Period: sec}
	specs := []algo.Spec{mustSpec(t, l)}
	t0, t1, t2 := base, base.Add(100*ms), base.Add(200*ms)
	s := mustTake(t, algo.State{}, l, t0, 3)
	states := []algo.State{s}
	if g, _, _ := leaseSpecs(ptrs(states), specs, t1.UnixMicro(), 4); g != 4 {
		t.Fatalf("LeaseSpecs(want 4) = %d, want 4", g)
	}
	states[0] = mustTake(t, states[0], l, t2, 2)
	// Give back 5 of the lease taken at t1: the 4 units at t1 and one of t2.
	algo.GiveBackSpecs(ptrs(states), specs, t2.UnixMicro(), t1.UnixMicro(), 5)
	want := []algo.Event{{T: t0.UnixMicro(), N: 3}, {T: t2.UnixMicro(), N: 1}}
	if !reflect.DeepEqual(states[0].Log, want) || states[0].A != 4 {
		t.Errorf("after GiveBackSpecs(lease at t1, 5): Log %+v, A %d, want %+v, A 4", states[0].Log, states[0].A, want)
	}
	// Giving back more removes only events at or after t1: t0's stay.
	algo.GiveBackSpecs(ptrs(states), specs, t2.UnixMicro(), t1.UnixMicro(), 100)
	want = want[:1]
	if !reflect.DeepEqual(states[0].Log, want) || states[0].A != 3 {
		t.Errorf("after GiveBackSpecs(lease at t1, 100): Log %+v, A %d, want %+v, A 3", states[0].Log, states[0].A, want)
	}
	if got := available(t, states[0], l, t2); got != 7 {
		t.Errorf("log admits %d, want 7", got)
	}
}

func TestGiveBackSpecsWindows(t *testing.T) {
	fw := limit.Limit{Algorithm: limit.FixedWindow, Rate: 10, Period: sec}
	swc := limit.Limit{Algorithm: limit.SlidingWindowCounter, Rate: 10, Period: sec}
	leaseAt := base.Add(100 * ms)
	lease := func(l limit.Limit) []algo.State {
		states := make([]algo.State, 1)
		if g, _, _ := leaseSpecs(ptrs(states), []algo.Spec{mustSpec(t, l)}, leaseAt.UnixMicro(), 8); g != 8 {
			t.Fatalf("LeaseSpecs(%v, want 8) = %d, want 8", l, g)
		}
		return states
	}
	// FixedWindow: the lease's window has ended; its count no longer matters.
	states := lease(fw)
	before := cloneAll(states)
	next := base.Add(sec + 500*ms)
	algo.GiveBackSpecs(ptrs(states), []algo.Spec{mustSpec(t, fw)}, next.UnixMicro(), leaseAt.UnixMicro(), 8)
	if !reflect.DeepEqual(states, before) {
		t.Errorf("FixedWindow give back after the window: states %+v, want %+v", states, before)
	}
	if got := available(t, states[0], fw, next); got != 10 {
		t.Errorf("FixedWindow admits %d in the next window, want 10", got)
	}
	// SlidingWindowCounter: in the next window the lease weighs as the
	// previous count; 8*0.5 = 4 at 1.5s, 0 once given back.
	states = lease(swc)
	if got := available(t, states[0], swc, next); got != 6 {
		t.Errorf("SlidingWindowCounter admits %d at 1.5s, want 6", got)
	}
	algo.GiveBackSpecs(ptrs(states), []algo.Spec{mustSpec(t, swc)}, next.UnixMicro(), leaseAt.UnixMicro(), 8)
	if got := available(t, states[0], swc, next); got != 10 {
		t.Errorf("SlidingWindowCounter admits %d at 1.5s after giving back, want 10", got)
	}
	// Two windows later the lease no longer counts: nothing to give back.
	states = lease(swc)
	later := base.Add(2*sec + 500*ms)
	before = cloneAll(states)
	algo.GiveBackSpecs(ptrs(states), []algo.Spec{mustSpec(t, swc)}, later.UnixMicro(), leaseAt.UnixMicro(), 8)
	if !reflect.DeepEqual(states, before) {
		t.Errorf("SlidingWindowCounter give back two windows later: states %+v, want %+v", states, before)
	}
}

// TestTakeBucketBackwardsClockRetryAfter is the regression test for the
// buckets' RetryAfter and ResetAfter when the clock is behind the last charge
// by more than the bucket's headroom. A bucket emptied at 1s and read at
// 500ms would be "more than empty", which a clock going forward cannot
// produce: it is empty as of 500ms, the denial returns it so, and the unit
// it waits for is back at 600ms, as RetryAfter says (not a microsecond
// earlier).
func TestTakeBucketBackwardsClockRetryAfter(t *testing.T) {
	for _, a := range []limit.Algorithm{limit.TokenBucket, limit.LeakyBucket} {
		t.Run(a.String(), func(t *testing.T) {
			l := limit.Limit{Algorithm: a, Rate: 10, Period: sec}
			s := mustTake(t, algo.State{}, l, base.Add(sec), 10)
			now := base.Add(500 * ms)
			next, d, err := take(clone(s), l, now, 1)
			if err != nil || d.Allowed {
				t.Fatalf("Take(at 500ms, cost 1) = %+v, %v, want denied", d, err)
			}
			if d.RetryAfter != 100*ms || d.ResetAfter != sec {
				t.Errorf("Take(at 500ms, cost 1) after emptying at 1s = %+v, want RetryAfter 100ms, ResetAfter 1s", d)
			}
			if want := (algo.State{T: now.UnixMicro(), A: 10 * 1_000_000}); !reflect.DeepEqual(next, want) {
				t.Errorf("Take(at 500ms, cost 1) returned state %+v, want %+v (empty as of 500ms)", next, want)
			}
			if _, d2, _ := take(clone(next), l, now.Add(d.RetryAfter-µs), 1); d2.Allowed {
				t.Errorf("Take(at 500ms+RetryAfter-1µs, cost 1) = %+v, want denied", d2)
			}
			if _, d2, _ := take(clone(next), l, now.Add(d.RetryAfter), 1); !d2.Allowed {
				t.Errorf("Take(at 500ms+RetryAfter %v, cost 1) = %+v, want allowed", d.RetryAfter, d2)
			}
		})
	}
}

// TestClockSteppedAnHourDoesNotLockKeysOut is the regression test for issue
// 10, item 8: with the clock stepped back an hour (or forward an hour and
// corrected back), a key that had used its limit was denied for about an
// hour under all five algorithms, the windows reporting a RetryAfter of
// 30-60s all along. A client that retries after each RetryAfter must now be
// admitted within one period (two for SlidingWindowCounter) of the step, a
// period more than a fresh key's worst wait, and each of its waits must be
// what RetryAfter said.
func TestClockSteppedAnHourDoesNotLockKeysOut(t *testing.T) {
	for _, a := range algorithms {
		l := limit.Limit{Algorithm: a, Rate: 3, Period: time.Minute}
		bound := 2 * time.Minute // a fresh key's worst wait (a period; a bucket's fill time), plus a period
		if a == limit.SlidingWindowCounter {
			bound = 3 * time.Minute // the charged window weighs on the next one
		}
		for _, forward := range []bool{false, true} {
			name := a.String() + "/back"
			if forward {
				name = a.String() + "/forward-and-back"
			}
			t.Run(name, func(t *testing.T) {
				var s algo.State
				used := base.Add(time.Hour + 30*sec)
				if forward {
					s = mustTake(t, s, l, base.Add(30*sec), 3)
				}
				s = mustTake(t, s, l, used, 3)
				step := used.Add(-time.Hour + 10*sec)
				now := step
				for range 10 {
					next, d, err := take(s, l, now, 1)
					if err != nil {
						t.Fatal(err)
					}
					s = next
					if d.Allowed {
						if waited := now.Sub(step); waited > bound {
							t.Errorf("admitted %v after the step, want within %v", waited, bound)
						}
						return
					}
					if d.RetryAfter <= 0 || d.RetryAfter > bound {
						t.Fatalf("Take(at step+%v, cost 1) = %+v, want RetryAfter in (0, %v]", now.Sub(step), d, bound)
					}
					now = now.Add(d.RetryAfter)
				}
				t.Fatalf("still denied at step+%v after 10 waits of RetryAfter", now.Sub(step))
			})
		}
	}
}

// TestTakeAtOrBeforeUnixEpochCharges is the regression test for requests at
// or before the Unix epoch: State.T == 0 means "never", and a time at or
// before the epoch is taken as 0, so a charge there was recorded as no charge
// and every later request at that instant was admitted again.
func TestTakeAtOrBeforeUnixEpochCharges(t *testing.T) {
	for _, now := range []time.Time{time.Unix(0, 0), time.Unix(0, 0).Add(-sec)} {
		for _, a := range algorithms {
			t.Run(a.String()+"/"+now.UTC().Format(time.RFC3339), func(t *testing.T) {
				l := limit.Limit{Algorithm: a, Rate: 1, Period: sec}
				s := mustTake(t, algo.State{}, l, now, 1)
				if _, d, err := take(s, l, now, 1); err != nil || d.Allowed {
					t.Errorf("second Take(%v, at %v, cost 1) = %+v, %v, want denied", l, now.UTC(), d, err)
				}
			})
		}
	}
}
