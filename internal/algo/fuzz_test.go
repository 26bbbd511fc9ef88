package algo_test

import (
	"errors"
	"math/bits"
	"reflect"
	"testing"
	"time"

	"github.com/hybridlimit/hybridlimit/internal/algo"
	"github.com/hybridlimit/hybridlimit/internal/limitspec"
	"github.com/hybridlimit/hybridlimit/limit"
)

// maxSteps bounds the requests of one fuzz input.
const maxSteps = 64

// Fuzzed clocks stay between the epoch plus a day and about 2126: requests at
// or before the epoch are TestTakeAtOrBeforeUnixEpochCharges's.
var (
	minNow = time.Unix(0, 0).Add(24 * time.Hour)
	maxNow = base.Add(100 * 365 * 24 * time.Hour)
)

// step is one fuzzed request: advance the clock by dt (which may be
// negative), then ask for cost units.
type step struct {
	dt   time.Duration
	cost int64
	op   byte // FuzzLease: what to do
}

// decodeSteps reads four bytes a step. Byte 0 selects how the clock moves:
// not at all, by a signed number of microseconds, by a signed fraction of the
// period (1/256ths) or by whole periods. Byte 3 selects the cost relative to
// capacity c: small, near c, a fraction of c, c+1 (too large) or 0 (invalid).
func decodeSteps(data []byte, period time.Duration, c int64) []step {
	var steps []step
	for len(data) >= 4 && len(steps) < maxSteps {
		b := data[:4]
		data = data[4:]
		m := int64(int16(uint16(b[1])<<8 | uint16(b[2])))
		var dt time.Duration
		switch b[0] % 4 {
		case 1:
			dt = time.Duration(m) * µs
		case 2:
			dt = (time.Duration(m) * (period / 256)).Truncate(µs)
		case 3:
			dt = time.Duration(int8(b[1])) * period
		}
		var cost int64
		switch x := int64(b[3]); {
		case x < 128:
			cost = 1 + x%8
		case x < 192:
			cost = c - (x - 128)
		case x < 254:
			cost = 1 + c*(x-192)/62
		case x == 254:
			cost = c + 1
		}
		steps = append(steps, step{dt: dt, cost: cost, op: b[0] >> 2})
	}
	return steps
}

// advance moves now by dt, keeping it within [minNow, maxNow].
func advance(now time.Time, dt time.Duration) time.Time {
	next := now.Add(dt)
	if next.Before(minNow) || next.After(maxNow) {
		return now
	}
	return next
}

func isBucket(a limit.Algorithm) bool { return a == limit.TokenBucket || a == limit.LeakyBucket }

// checkTake decides one request with take (limit.Take on a State the test
// can look into), checks every invariant the semantics guarantee, and
// returns the state to continue from and the decision.
func checkTake(t *testing.T, s algo.State, l limit.Limit, sp algo.Spec, now time.Time, cost int64) (algo.State, limit.Decision) {
	t.Helper()
	c := l.Capacity()
	next, d, err := take(clone(s), l, now, cost)
	at := now.Sub(base)
	switch {
	case cost < 1 || cost > c:
		want := limit.ErrInvalidCost
		if cost > c {
			want = limit.ErrCostExceedsLimit
		}
		if !errors.Is(err, want) {
			t.Fatalf("Take(%v, at %v, cost %d) error = %v, want %v", l, at, cost, err, want)
		}
		if !reflect.DeepEqual(next, s) || d != (limit.Decision{}) {
			t.Fatalf("Take(%v, at %v, cost %d) = %+v, %+v on error, want %+v unchanged", l, at, cost, next, d, s)
		}
		return s, d
	case err != nil:
		t.Fatalf("Take(%v, at %v, cost %d) error = %v", l, at, cost, err)
	}

	if d.Remaining < 0 || d.Remaining > c {
		t.Fatalf("Take(%v, at %v, cost %d) = %+v, want Remaining in [0, %d]", l, at, cost, d, c)
	}
	if d.RetryAfter < 0 || d.ResetAfter < 0 || d.Delay < 0 {
		t.Fatalf("Take(%v, at %v, cost %d) = %+v, want no negative duration", l, at, cost, d)
	}
	if d.Allowed != (d.RetryAfter == 0) {
		t.Fatalf("Take(%v, at %v, cost %d) = %+v, want RetryAfter 0 exactly when allowed", l, at, cost, d)
	}
	if d.Delay != 0 && (!d.Allowed || l.Algorithm != limit.LeakyBucket) {
		t.Fatalf("Take(%v, at %v, cost %d) = %+v, want Delay only on an admitted LeakyBucket request", l, at, cost, d)
	}
	if d.Delay > d.ResetAfter {
		t.Fatalf("Take(%v, at %v, cost %d) = %+v, want Delay <= ResetAfter", l, at, cost, d)
	}
	if d.Allowed && d.ResetAfter <= 0 {
		t.Fatalf("Take(%v, at %v, cost %d) = %+v, want ResetAfter > 0 after a charge", l, at, cost, d)
	}
	if !d.Allowed && d.RetryAfter > d.ResetAfter {
		t.Fatalf("Take(%v, at %v, cost %d) = %+v, want RetryAfter <= ResetAfter", l, at, cost, d)
	}
	// ResetAfter is bounded: a window and its successor, or a whole refill
	// rounded up to a quantum, even when the clock went back. A window
	// ahead of now by at most a period counts as no time passed, so its
	// durations grow by as much as it is ahead.
	maxReset := 2*l.Period + ahead(rebased(s, sp, now), sp, now)
	if isBucket(l.Algorithm) {
		maxReset = fillTime(sp)
	}
	if d.ResetAfter > maxReset {
		t.Fatalf("Take(%v, at %v, cost %d) = %+v, want ResetAfter <= %v", l, at, cost, d, maxReset)
	}

	if !d.Allowed {
		// Nothing is charged; a state too far ahead of now is rebased.
		if want := rebased(s, sp, now); !reflect.DeepEqual(next, want) {
			t.Fatalf("denied Take(%v, at %v, cost %d) = %+v, want %+v (s %+v, rebased if ahead)", l, at, cost, next, want, s)
		}
		if d.Remaining >= cost {
			t.Fatalf("denied Take(%v, at %v, cost %d) = %+v, want Remaining < cost", l, at, cost, d)
		}
	}

	// Remaining is exact: on the same state, cost+Remaining (allowed) or
	// Remaining (denied) units fit, one more does not.
	fit := d.Remaining
	if d.Allowed {
		fit += cost
	}
	if fit >= 1 {
		if _, d2, err := take(clone(s), l, now, fit); err != nil || !d2.Allowed || d2.Remaining != 0 {
			t.Fatalf("Take(%v, at %v, cost %d) = %+v, but Take(cost %d) on the same state = %+v, %v, want allowed with Remaining 0", l, at, cost, d, fit, d2, err)
		}
	}
	if fit+1 <= c {
		if _, d2, err := take(clone(s), l, now, fit+1); err != nil || d2.Allowed {
			t.Fatalf("Take(%v, at %v, cost %d) = %+v, but Take(cost %d) on the same state = %+v, %v, want denied", l, at, cost, d, fit+1, d2, err)
		}
	}

	// Waiting: durations count from now, also when the state is ahead of
	// it (a clock stepped back).
	if !d.Allowed {
		// After RetryAfter, with nothing else charged, the same request is
		// admitted by the state the denial returned, and not a microsecond
		// earlier.
		if _, d2, _ := take(clone(next), l, now.Add(d.RetryAfter), cost); !d2.Allowed {
			t.Fatalf("Take(%v, at %v, cost %d) = %+v, but at +RetryAfter = %+v, want allowed", l, at, cost, d, d2)
		}
		if _, d2, _ := take(clone(next), l, now.Add(d.RetryAfter-µs), cost); d2.Allowed {
			t.Fatalf("Take(%v, at %v, cost %d) = %+v, but at +RetryAfter-1µs = %+v, want denied", l, at, cost, d, d2)
		}
	}
	// After ResetAfter, with nothing else charged, the limit is full.
	if av := available(t, next, l, now.Add(d.ResetAfter)); av != c {
		t.Fatalf("Take(%v, at %v, cost %d) = %+v, but at +ResetAfter %d units are available, want %d", l, at, cost, d, av, c)
	}
	return next, d
}

// fillTime is the time a bucket takes to fill from empty, rounded up to a
// quantum.
func fillTime(sp algo.Spec) time.Duration {
	fill := (sp.C*sp.P + sp.R - 1) / sp.R // C*P <= 2^50: no overflow
	return time.Duration(fill*sp.Q) * µs
}

// rebased is the state s as a transition at now sees it, the test's own
// statement of the rule in the package documentation: a bucket whose
// deficit, read back modulo 2^52 as the Redis form reads it, exceeds the
// capacity is empty as of now; a window whose time (the log: whose newest
// event) is more than a period ahead of now is moved to now, its counts
// kept (the log's events after now become one event at now).
func rebased(s algo.State, sp algo.Spec, now time.Time) algo.State {
	s = clone(s)
	n := max(now.UnixMicro(), 1)
	switch limit.Algorithm(sp.Algorithm) {
	case limit.TokenBucket, limit.LeakyBucket:
		if s.T == 0 || s.A <= 0 || s.T/sp.Q <= n/sp.Q {
			return s
		}
		_, lo := bits.Mul64(uint64(s.T/sp.Q-n/sp.Q), uint64(sp.R))
		if d := (lo + uint64(s.A)) & (1<<52 - 1); d < 1<<51 && d > uint64(sp.C*sp.P) {
			s.T, s.A = n, sp.C*sp.P
		}
	case limit.FixedWindow, limit.SlidingWindowCounter:
		if s.T-n > sp.P*sp.Q {
			s.T = n
		}
	case limit.SlidingWindowLog:
		if len(s.Log) == 0 || s.Log[len(s.Log)-1].T-n <= sp.P {
			return s
		}
		var kept []algo.Event
		var moved int64
		for _, ev := range s.Log {
			if ev.T > n {
				moved += ev.N
			} else {
				kept = append(kept, ev)
			}
		}
		if k := len(kept); k > 0 && kept[k-1].T == n {
			kept[k-1].N += moved
		} else {
			kept = append(kept, algo.Event{T: n, N: moved})
		}
		s.Log, s.T = kept, n
	}
	return s
}

// ahead is how far a window's state (already rebased) lies after now: the
// time of its last charge, or its newest event, less now; 0 for a bucket.
func ahead(s algo.State, sp algo.Spec, now time.Time) time.Duration {
	var t int64
	switch limit.Algorithm(sp.Algorithm) {
	case limit.FixedWindow, limit.SlidingWindowCounter:
		t = s.T
	case limit.SlidingWindowLog:
		if len(s.Log) > 0 {
			t = s.Log[len(s.Log)-1].T
		}
	}
	return max(time.Duration(t-now.UnixMicro())*µs, 0)
}

func FuzzTransition(f *testing.F) {
	// Steps: {clock mode, magnitude hi, magnitude lo, cost selector}.
	burst := []byte{0, 0, 0, 191, 0, 0, 0, 1, 2, 0, 16, 1, 1, 0, 100, 254, 3, 1, 0, 0}
	back := []byte{0, 0, 0, 191, 2, 0, 64, 0, 2, 0xff, 0x80, 0, 2, 0, 0x60, 0, 3, 0xff, 0, 3, 0, 0, 0, 255}
	windows := []byte{0, 0, 0, 200, 2, 0, 200, 3, 2, 0, 100, 3, 2, 0, 60, 250, 3, 2, 0, 1, 1, 0xff, 0xff, 1}
	for _, a := range algorithms {
		f.Add(uint8(a), int64(10), int64(1_000_000), int64(0), int64(0), burst)
		f.Add(uint8(a), int64(3), int64(1_000_000), int64(0), int64(123_456), windows)
		f.Add(uint8(a), int64(7), int64(1500), int64(0), int64(-999), back)
		f.Add(uint8(a), int64(100), int64(60_000_000), int64(0), int64(0), back)
		f.Add(uint8(a), int64(1000), limit.MaxPeriod.Microseconds(), int64(0), int64(1), windows)
		f.Add(uint8(a), int64(limit.MaxLogRate), int64(1_000_000), int64(0), int64(17), burst)
		f.Add(uint8(a), maxRate, int64(1_000_000), int64(0), int64(1), windows)
	}
	f.Add(uint8(limit.TokenBucket), int64(1), int64(1_000_000), int64(3), int64(0), burst)
	f.Add(uint8(limit.TokenBucket), int64(10), int64(1_000_000), int64(3), int64(0), back)
	f.Add(uint8(limit.LeakyBucket), int64(2), int64(1_000_000), int64(3), int64(0), burst)
	f.Add(uint8(limit.LeakyBucket), int64(1), limit.MaxPeriod.Microseconds(), int64(99), int64(0), windows)
	f.Add(uint8(limit.TokenBucket), maxRate, int64(1_000_000), maxRate, int64(0), windows)
	f.Add(uint8(limit.FixedWindow), int64(5), int64(7), int64(5), int64(3), windows)
	f.Add(uint8(limit.SlidingWindowCounter), int64(10), int64(1_000_000), int64(10), int64(0), windows)
	f.Add(uint8(limit.SlidingWindowCounter), int64(999_983), int64(3_000_000), int64(0), int64(0), windows)

	f.Fuzz(func(t *testing.T, alg uint8, rate, periodUS, burst, start int64, data []byte) {
		if periodUS < -limit.MaxPeriod.Microseconds() || periodUS > limit.MaxPeriod.Microseconds() {
			return
		}
		l := limit.Limit{Algorithm: limit.Algorithm(alg), Rate: rate, Period: time.Duration(periodUS) * µs, Burst: burst}
		sp, err := limitspec.Of(l)
		if err != nil {
			if !errors.Is(err, limit.ErrInvalidLimit) {
				t.Fatalf("limitspec.Of(%v) error = %v, want %v", l, err, limit.ErrInvalidLimit)
			}
			return
		}
		const span = 50 * 365 * 24 * time.Hour
		now := advance(base, time.Duration(start%int64(span/µs))*µs)
		var s algo.State
		for _, st := range decodeSteps(data, l.Period, l.Capacity()) {
			now = advance(now, st.dt)
			s, _ = checkTake(t, s, l, sp, now, st.cost)
		}
	})
}

// Fuzzed limits are drawn from these tables: every algorithm, rates and
// periods from the smallest to the largest, bursts equal to, below and above
// the rate. Some combinations are invalid, which FuzzTakeAll checks too.
var (
	fuzzRates   = []int64{1, 2, 3, 7, 10, 100, 1000, limit.MaxLogRate, 999_983, 1 << 20, maxRate}
	fuzzPeriods = []time.Duration{µs, 7 * µs, 1025 * µs, ms, sec, 1500 * ms, time.Minute, time.Hour, 24 * time.Hour, limit.MaxPeriod}
)

// decodeLimits reads n limits of four bytes each from data: algorithm (any
// byte, so unknown ones too), rate, period and burst selectors.
func decodeLimits(data []byte, n int) ([]limit.Limit, []byte) {
	limits := make([]limit.Limit, 0, n)
	for len(data) >= 4 && len(limits) < n {
		b := data[:4]
		data = data[4:]
		a := limit.Algorithm(b[0] % 6) // 5 is unknown
		r := fuzzRates[int(b[1])%len(fuzzRates)]
		p := fuzzPeriods[int(b[2])%len(fuzzPeriods)]
		var burst int64
		switch b[3] % 6 {
		case 1:
			burst = r
		case 2:
			burst = 1
		case 3:
			burst = 2 * r
		case 4:
			burst = max(r/2, 1)
		case 5:
			burst = 3
		}
		limits = append(limits, limit.Limit{Algorithm: a, Rate: r, Period: p, Burst: burst})
	}
	return limits, data
}

// fuzzSetup decodes the limits and the clock of FuzzTakeAll and FuzzLease.
func fuzzSetup(data []byte) (limits []limit.Limit, now time.Time, rest []byte, ok bool) {
	if len(data) < 3 {
		return nil, time.Time{}, nil, false
	}
	n := 2 + int(data[0])%2
	limits, rest = decodeLimits(data[1:], n)
	if len(limits) != n || len(rest) < 2 {
		return nil, time.Time{}, nil, false
	}
	// Start anywhere in a day and a half of base, so windows of any phase.
	off := time.Duration(uint16(rest[0])<<8|uint16(rest[1])) * (36 * time.Hour / 65536)
	return limits, base.Add(off.Truncate(µs)), rest[2:], true
}

// minCapPeriod returns the smallest capacity and period of limits.
func minCapPeriod(limits []limit.Limit) (int64, time.Duration) {
	c, p := limits[0].Capacity(), limits[0].Period
	for _, l := range limits[1:] {
		c, p = min(c, l.Capacity()), min(p, l.Period)
	}
	return c, p
}

func FuzzTakeAll(f *testing.F) {
	f.Add([]byte{0, 0, 4, 5, 0, 0, 5, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 10, 1, 0, 0, 255, 1, 0, 0, 0, 254})
	f.Add([]byte{1, 2, 3, 4, 1, 3, 4, 4, 1, 1, 2, 1, 0, 1, 2, 0, 4, 200, 2, 0, 100, 3, 2, 0, 60, 250, 3, 2, 0, 1, 1, 0xff, 0xff, 1, 3, 0, 0, 255})
	f.Add([]byte{1, 3, 1, 4, 0, 4, 5, 4, 1, 0, 6, 6, 0, 9, 9, 0, 0, 0, 0, 191, 2, 0, 64, 0, 2, 0xff, 0x80, 0, 2, 0, 0x60, 0, 3, 0xff, 0, 3})
	f.Add([]byte{0, 5, 1, 4, 0, 0, 1, 4, 0, 0, 0, 0, 0, 0, 0, 1})                           // an unknown algorithm
	f.Add([]byte{1, 3, 4, 8, 0, 0, 0, 8, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 1, 2, 0, 1, 200}) // a limit given twice
	f.Add([]byte{0, 0, 4, 4, 0, 0, 4, 4, 1, 0, 0, 0, 0, 0, 0, 1})                           // equal but for Burst 0 and Rate
	f.Add([]byte{0, 2, 0, 4, 3, 2, 1, 4, 0, 0, 0, 0, 0, 1, 0, 1, 0, 1, 0, 1, 1, 0, 0, 1, 1, 0, 2, 0, 3})
	f.Add([]byte{1, 1, 10, 9, 0, 4, 10, 4, 1, 3, 6, 9, 1, 0x12, 0x34, 2, 0, 0, 191, 2, 0, 64, 0, 2, 0x7f, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		limits, now, rest, ok := fuzzSetup(data)
		if !ok {
			return
		}
		c, p := minCapPeriod(limits)
		states := make([]algo.State, len(limits))
		for _, st := range decodeSteps(rest, p, c) {
			now = advance(now, st.dt)
			checkTakeAll(t, states, limits, now, st.cost)
		}
	})
}

// checkTakeAll decides one request with takeAll (limit.TakeAll), compares
// it with take on each limit alone, and leaves the new states in states.
func checkTakeAll(t *testing.T, states []algo.State, limits []limit.Limit, now time.Time, cost int64) {
	t.Helper()
	before := cloneAll(states)
	at := now.Sub(base)
	// TakeAll rejects a limit given twice, then checks each limit and the
	// cost against it, in order: its error is the first that Take gives on
	// one limit alone.
	wantErr := limit.CheckDistinct(limits)
	for _, l := range limits {
		if wantErr != nil {
			break
		}
		_, _, wantErr = take(algo.State{}, l, now, cost)
	}
	d, b, err := takeAll(states, limits, now, cost)
	if wantErr != nil || err != nil {
		if err == nil || wantErr == nil || err.Error() != wantErr.Error() {
			t.Fatalf("TakeAll(%v, at %v, cost %d) error = %v, want %v", limits, at, cost, err, wantErr)
		}
		if !reflect.DeepEqual(states, before) || d != (limit.Decision{}) {
			t.Fatalf("TakeAll(%v, at %v, cost %d) = %+v, %v, states %+v, want %+v unchanged", limits, at, cost, d, err, states, before)
		}
		return
	}

	alone := make([]limit.Decision, len(limits))
	nexts := make([]algo.State, len(limits))
	all := true
	for i, l := range limits {
		var e error
		nexts[i], alone[i], e = take(clone(before[i]), l, now, cost)
		if e != nil {
			t.Fatalf("TakeAll(%v, at %v, cost %d) succeeded, but Take on limit %d alone error = %v", limits, at, cost, i, e)
		}
		all = all && alone[i].Allowed
	}
	if d.Allowed != all || b < 0 || b >= len(limits) {
		t.Fatalf("TakeAll(%v, at %v, cost %d) = %+v, binding %d, want allowed %v (alone: %+v)", limits, at, cost, d, b, all, alone)
	}
	want := alone[b]
	if d.Allowed {
		// Each state is what Take alone makes of it; the binding limit has
		// the fewest Remaining (the first such); Delay is the longest.
		if !reflect.DeepEqual(states, nexts) {
			t.Fatalf("TakeAll(%v, at %v, cost %d) states = %+v, want %+v (Take alone)", limits, at, cost, states, nexts)
		}
		for i, a := range alone {
			want.Delay = max(want.Delay, a.Delay)
			if a.Remaining < alone[b].Remaining || a.Remaining == alone[b].Remaining && i < b {
				t.Fatalf("TakeAll(%v, at %v, cost %d) binding %d (%+v), want %d (%+v)", limits, at, cost, b, alone[b], i, a)
			}
		}
	} else {
		// Nothing charged (states ahead of now rebased); the binding limit
		// denies, with the longest RetryAfter of those that deny.
		if want := rebasedAll(before, limits, now); !reflect.DeepEqual(states, want) {
			t.Fatalf("denied TakeAll(%v, at %v, cost %d) states = %+v, want %+v (before %+v, rebased if ahead)", limits, at, cost, states, want, before)
		}
		for i, a := range alone {
			if !a.Allowed && a.RetryAfter > want.RetryAfter {
				t.Fatalf("TakeAll(%v, at %v, cost %d) binding %d (%+v), but limit %d denies for longer (%+v)", limits, at, cost, b, want, i, a)
			}
		}
		if want.Allowed {
			t.Fatalf("TakeAll(%v, at %v, cost %d) binding %d, which admits the request alone (%+v)", limits, at, cost, b, want)
		}
	}
	if d != want {
		t.Fatalf("TakeAll(%v, at %v, cost %d) = %+v, want %+v (from Take alone: %+v)", limits, at, cost, d, want, alone)
	}
}

// FuzzLease interleaves Take, LeaseSpecs and GiveBackSpecs on two or three
// limits of one key.
func FuzzLease(f *testing.F) {
	f.Add([]byte{0, 0, 4, 5, 0, 2, 4, 5, 0, 0, 0, 4, 0, 0, 0, 3, 4, 0, 1, 200, 8, 0, 0, 1, 4, 0, 1, 255, 8, 0, 0, 191, 9, 0, 16, 1})
	f.Add([]byte{1, 3, 1, 4, 0, 4, 5, 4, 1, 0, 6, 6, 0, 9, 9, 0, 0, 4, 0, 0, 254, 2, 0, 64, 0, 8, 0, 0, 250, 6, 0, 200, 0, 5, 0, 3, 100, 10, 0, 100, 20})
	f.Add([]byte{0, 2, 0, 4, 3, 2, 1, 4, 0, 0, 0, 0, 0, 4, 0, 0, 200, 4, 0, 0, 200, 8, 0, 0, 255, 5, 0, 1, 1, 9, 0, 2, 2})
	f.Add([]byte{1, 4, 5, 4, 0, 1, 4, 4, 1, 2, 4, 4, 1, 0, 0, 0, 4, 0, 0, 190, 7, 0, 0x40, 0, 11, 0, 0x40, 254, 8, 0, 0, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		limits, now, rest, ok := fuzzSetup(data)
		if !ok {
			return
		}
		if limit.CheckDistinct(limits) != nil {
			return // TakeAll rejects it; FuzzTakeAll checks that
		}
		specs := make([]algo.Spec, len(limits))
		for i, l := range limits {
			sp, err := limitspec.Of(l)
			if err != nil {
				return
			}
			specs[i] = sp
		}
		c, p := minCapPeriod(limits)
		states := make([]algo.State, len(limits))
		leaseAt := now
		for _, st := range decodeSteps(rest, p, c) {
			now = advance(now, st.dt)
			switch st.op % 3 {
			case 0:
				if st.cost >= 1 && st.cost <= c {
					checkTakeAll(t, states, limits, now, st.cost)
				}
			case 1:
				if checkLease(t, states, limits, specs, now, st.cost) > 0 {
					leaseAt = now
				}
			case 2:
				checkGiveBack(t, states, limits, specs, now, leaseAt, st.cost)
			}
		}
	})
}

// rebasedAll is rebased for each state of limits (all valid).
func rebasedAll(states []algo.State, limits []limit.Limit, now time.Time) []algo.State {
	out := make([]algo.State, len(states))
	for i, l := range limits {
		sp, _ := limitspec.Of(l)
		out[i] = rebased(states[i], sp, now)
	}
	return out
}

// availableAll returns what each limit admits at now.
func availableAll(t *testing.T, states []algo.State, limits []limit.Limit, now time.Time) []int64 {
	t.Helper()
	av := make([]int64, len(limits))
	for i, l := range limits {
		av[i] = available(t, states[i], l, now)
	}
	return av
}

func checkLease(t *testing.T, states []algo.State, limits []limit.Limit, specs []algo.Spec, now time.Time, want int64) int64 {
	t.Helper()
	before := cloneAll(states)
	av := availableAll(t, states, limits, now)
	g, d, _ := leaseSpecs(ptrs(states), specs, now.UnixMicro(), want)
	wantG := max(want, 0)
	for _, a := range av {
		wantG = min(wantG, a)
	}
	if g != wantG {
		t.Fatalf("LeaseSpecs(%v, at %v, want %d) = %d, want %d (available %v)", limits, now.Sub(base), want, g, wantG, av)
	}
	if g == 0 {
		if wantS := rebasedAll(before, limits, now); !reflect.DeepEqual(states, wantS) || d.Allowed {
			t.Fatalf("LeaseSpecs(%v, at %v, want %d) granted 0 with %+v and states %+v, want denied and %+v (rebased if ahead)", limits, now.Sub(base), want, d, states, wantS)
		}
		return 0
	}
	after := availableAll(t, states, limits, now)
	least := after[0]
	for i := range after {
		least = min(least, after[i])
		if after[i] != av[i]-g {
			t.Fatalf("LeaseSpecs(%v, at %v, want %d) granted %d: limit %d admits %d, want %d", limits, now.Sub(base), want, g, i, after[i], av[i]-g)
		}
	}
	if !d.Allowed || d.Remaining != least {
		t.Fatalf("LeaseSpecs(%v, at %v, want %d) = %d, %+v, want allowed with Remaining %d", limits, now.Sub(base), want, g, d, least)
	}
	return g
}

func checkGiveBack(t *testing.T, states []algo.State, limits []limit.Limit, specs []algo.Spec, now, leaseAt time.Time, units int64) {
	t.Helper()
	av := availableAll(t, states, limits, now)
	algo.GiveBackSpecs(ptrs(states), specs, now.UnixMicro(), leaseAt.UnixMicro(), units)
	after := availableAll(t, states, limits, now)
	for i, l := range limits {
		hi := av[i]
		if units > 0 {
			hi += units
		}
		if after[i] > l.Capacity() || after[i] < av[i] || after[i] > hi {
			t.Fatalf("GiveBackSpecs(%v, at %v, lease at %v, %d units): limit %d admits %d, was %d, want in [%d, min(%d, %d)]",
				limits, now.Sub(base), leaseAt.Sub(base), units, i, after[i], av[i], av[i], hi, l.Capacity())
		}
		if s := states[i]; s.A < 0 || s.B < 0 {
			t.Fatalf("GiveBackSpecs(%v, %d units): limit %d state %+v, want no negative count", limits, units, i, s)
		}
		if l.Algorithm == limit.SlidingWindowLog {
			var n int64
			for _, ev := range states[i].Log {
				if ev.N <= 0 {
					t.Fatalf("GiveBackSpecs(%v, %d units): limit %d log %+v holds an empty event", limits, units, i, states[i].Log)
				}
				n += ev.N
			}
			if n != states[i].A {
				t.Fatalf("GiveBackSpecs(%v, %d units): limit %d log %+v sums to %d, want A = %d", limits, units, i, states[i].Log, n, states[i].A)
			}
		}
	}
}

func FuzzValidate(f *testing.F) {
	for _, a := range []uint8{0, 1, 2, 3, 4, 5, 255} {
		f.Add(a, int64(10), int64(time.Second), int64(0))
		f.Add(a, maxRate, int64(time.Second), int64(0))
		f.Add(a, maxRate, int64(limit.MaxPeriod), int64(0))
		f.Add(a, int64(1000), int64(limit.MaxPeriod), int64(1000))
		f.Add(a, int64(1), int64(limit.MaxPeriod), int64(99))
		f.Add(a, int64(1), int64(limit.MaxPeriod), int64(100))
		f.Add(a, int64(1<<31), int64(1000001*µs), int64(0))
		f.Add(a, int64(0), int64(1500), int64(-1))
		f.Add(a, int64(-1<<63), int64(-1<<63), int64(-1<<63))
		f.Add(a, int64(1<<63-1), int64(1<<63-1), int64(1<<63-1))
	}
	f.Fuzz(func(t *testing.T, alg uint8, rate, period, burst int64) {
		l := limit.Limit{Algorithm: limit.Algorithm(alg), Rate: rate, Period: time.Duration(period), Burst: burst}
		_ = l.String()
		_ = l.Algorithm.String() + algo.ID(l.Algorithm).Code()
		sp, err := limitspec.Of(l)
		if verr := l.Validate(); (verr == nil) != (err == nil) {
			t.Fatalf("%#v: Validate() = %v but limitspec.Of error = %v", l, verr, err)
		}
		want := validOracle(l)
		if err != nil {
			if !errors.Is(err, limit.ErrInvalidLimit) || sp != (algo.Spec{}) {
				t.Fatalf("limitspec.Of(%#v) = %+v, %v, want zero Spec and %v", l, sp, err, limit.ErrInvalidLimit)
			}
			if want {
				t.Fatalf("limitspec.Of(%#v) error = %v, want valid", l, err)
			}
			return
		}
		if !want {
			t.Fatalf("limitspec.Of(%#v) = %+v, want an error", l, sp)
		}
		p := l.Period.Microseconds()
		if limit.Algorithm(sp.Algorithm) != l.Algorithm || sp.R != l.Rate || sp.C != l.Capacity() {
			t.Fatalf("limitspec.Of(%#v) = %+v, want algorithm, rate and capacity %v, %d, %d", l, sp, l.Algorithm, l.Rate, l.Capacity())
		}
		if !isPowerOfTen(sp.Q) || p%sp.Q != 0 || sp.P*sp.Q != p {
			t.Fatalf("limitspec.Of(%#v) = %+v, want Q a power of ten dividing %d µs and P*Q = %d", l, sp, p, p)
		}
		if l.Algorithm.Valid() && (l.Algorithm == limit.FixedWindow || l.Algorithm == limit.SlidingWindowLog) {
			if sp.Q != 1 {
				t.Fatalf("limitspec.Of(%#v) = %+v, want Q = 1 for a window counted in microseconds", l, sp)
			}
			return
		}
		if !productFits(sp.C, sp.P) {
			t.Fatalf("limitspec.Of(%#v) = %+v, want C*P <= 2^50", l, sp)
		}
		// The quantum is the smallest that fits.
		if sp.Q > 1 && productFits(sp.C, p/(sp.Q/10)) {
			t.Fatalf("limitspec.Of(%#v) = %+v, want Q = %d, which also fits", l, sp, sp.Q/10)
		}
	})
}

func isPowerOfTen(q int64) bool {
	for q > 1 && q%10 == 0 {
		q /= 10
	}
	return q == 1
}

// validOracle restates independently which limits are valid: the bounds
// Limit.Validate checks, then the quantum algo.New searches for.
func validOracle(l limit.Limit) bool {
	a := l.Algorithm
	if a > limit.SlidingWindowCounter || l.Rate < 1 || l.Rate > maxRate {
		return false
	}
	if a == limit.SlidingWindowLog && l.Rate > limit.MaxLogRate {
		return false
	}
	if l.Period <= 0 || l.Period > limit.MaxPeriod || l.Period%µs != 0 {
		return false
	}
	if l.Burst < 0 || l.Burst > maxRate || !isBucket(a) && l.Burst != 0 && l.Burst != l.Rate {
		return false
	}
	if a == limit.FixedWindow || a == limit.SlidingWindowLog {
		return true
	}
	c, p := l.Capacity(), l.Period.Microseconds()
	if isBucket(a) {
		// c*p <= rate*MaxFill, in 128 bits.
		hi, lo := bits.Mul64(uint64(c), uint64(p))
		fhi, flo := bits.Mul64(uint64(l.Rate), uint64(limit.MaxFill/µs))
		if hi > fhi || hi == fhi && lo > flo {
			return false
		}
	}
	for q := int64(1); q <= p && p%q == 0; q *= 10 {
		if productFits(c, p/q) {
			return true
		}
	}
	return false
}

// FuzzSpecMatches checks Spec.Matches against its definition: a's Spec
// matches b exactly when b is valid and has a's canonical form.
func FuzzSpecMatches(f *testing.F) {
	sec := int64(time.Second)
	for _, a := range []uint8{0, 1, 2, 3, 4} {
		f.Add(a, int64(10), sec, int64(0), a, int64(10), sec, int64(10))
		f.Add(a, int64(10), sec, int64(20), a, int64(10), sec, int64(20))
		f.Add(a, int64(10), sec, int64(20), a, int64(10), sec, int64(0))
		f.Add(a, int64(10), sec, int64(0), a, int64(10), sec, int64(-10))
		f.Add(a, int64(10), sec, int64(0), a, int64(10), 1000*sec, int64(0))
		f.Add(a, int64(10), sec, int64(0), a+1, int64(10), sec, int64(0))
		f.Add(a, int64(10), 60*sec, int64(0), a, int64(10), 60*sec+1, int64(0))
		f.Add(a, maxRate, int64(limit.MaxPeriod), int64(0), a, maxRate, int64(limit.MaxPeriod), maxRate)
	}
	f.Fuzz(func(t *testing.T, aAlg uint8, aRate, aPeriod, aBurst int64, bAlg uint8, bRate, bPeriod, bBurst int64) {
		a := limit.Limit{Algorithm: limit.Algorithm(aAlg), Rate: aRate, Period: time.Duration(aPeriod), Burst: aBurst}
		b := limit.Limit{Algorithm: limit.Algorithm(bAlg), Rate: bRate, Period: time.Duration(bPeriod), Burst: bBurst}
		sp, err := limitspec.Of(a)
		if err != nil {
			return
		}
		if !limitspec.Matches(&sp, &a) {
			t.Fatalf("limitspec.Of(%#v) = %+v does not match the limit it came from", a, sp)
		}
		want := b.Validate() == nil && b.Canonical() == a.Canonical()
		if got := limitspec.Matches(&sp, &b); got != want {
			t.Fatalf("Spec of %#v (%+v).Matches(%#v) = %v, want %v", a, sp, b, got, want)
		}
	})
}

// maxStep is the largest clock step FuzzClockStep makes, either way.
const maxStep = time.Hour

// admission is units admitted at a real instant (µs), for FuzzClockStep.
type admission struct {
	real, n int64
}

// FuzzClockStep plays a history in which the clock moves forward only,
// but for one step of up to an hour either way, as NTP or a failover to a
// replica steps a Redis server's clock, and checks what the package
// documentation promises for it: RetryAfter is truthful (checkTake); after
// the step, no request waits past one bound after the first request since
// the step or the last charge since (a fresh key's worst wait plus a period:
// two periods for FixedWindow and SlidingWindowLog, three for
// SlidingWindowCounter; a fill time for a bucket), and a key left alone
// that long is full again; and
// the step grants one capacity at most beyond what the limit admits over
// real time (a forward step; a step back only where the bucket's Redis form
// wraps).
func FuzzClockStep(f *testing.F) {
	// Limit selectors (as decodeLimits), the step's position, then steps
	// as decodeSteps reads them (moves are taken forward).
	use := []byte{0, 0, 0, 191, 1, 0, 0, 1, 1, 0, 16, 1, 1, 0, 100, 254, 2, 0, 64, 0, 2, 0, 64, 0, 2, 0, 64, 0, 3, 1, 0, 0}
	for a := byte(0); a < 5; a++ {
		for _, r := range []byte{2, 4, 6, 10} {
			for _, p := range []byte{4, 6, 7} {
				data := append([]byte{a, r, p, 0, 1}, use...)
				f.Add(data, -time.Hour.Microseconds())
				f.Add(data, time.Hour.Microseconds())
				f.Add(data, -int64(fuzzPeriods[p]/µs)-1)
				f.Add(data, -int64(fuzzPeriods[p]/µs)/2)
				f.Add(append([]byte{a, r, p, 3, 3}, use...), -time.Hour.Microseconds()+7)
			}
		}
		f.Add(append([]byte{a, 10, 4, 1, 2}, use...), int64(-1))
		f.Add(append([]byte{a, 9, 1, 2, 2}, use...), -time.Hour.Microseconds())
	}
	f.Fuzz(func(t *testing.T, data []byte, stepUS int64) {
		limits, rest := decodeLimits(data, 1)
		if len(limits) != 1 || len(rest) < 1 {
			return
		}
		l := limits[0]
		sp, err := limitspec.Of(l)
		if err != nil {
			return
		}
		c := l.Capacity()
		delta := time.Duration(stepUS%(maxStep.Microseconds()+1)) * µs
		steps := decodeSteps(rest[1:], l.Period, c)
		at := int(rest[0]) % (len(steps) + 1)

		// The bound on a wait after the step, and how far apart two real
		// instants may be for the windows' admissions to be compared.
		bound := 2 * l.Period
		switch {
		case isBucket(l.Algorithm):
			bound = fillTime(sp)
		case l.Algorithm == limit.SlidingWindowCounter:
			bound = 3 * l.Period
		}
		// A bucket read back by more than its Redis form holds (2^51 of
		// rate times quanta) reads anything from empty to full: one extra
		// capacity, and the waits are bounded only by a fill time from the
		// request (checkTake).
		wraps := isBucket(l.Algorithm) && delta < 0 &&
			float64(-delta/µs)/float64(sp.Q)*float64(sp.R)+float64(sp.C*sp.P) >= 1<<51-float64(2*sp.R)
		extra := int64(0)
		if delta > 0 || wraps {
			extra = c
		}

		now := base.Add(time.Duration(uint16(rest[0])) * (l.Period / 256)).Truncate(µs)
		var s algo.State
		var adm []admission
		stepped := false
		// After the step: when it was, and the latest of the first request
		// since and the last charge since.
		var stepAt, anchor time.Time
		touched := false
		for i := 0; i <= len(steps); i++ {
			if i == at {
				next := now.Add(delta)
				if next.Before(minNow) || next.After(maxNow) {
					return
				}
				now, stepped, stepAt, anchor = next, true, next, next
			}
			if i == len(steps) {
				break
			}
			st := steps[i]
			dt := st.dt
			if dt < 0 {
				dt = -dt
			}
			next := now.Add(dt)
			if next.After(maxNow) {
				return
			}
			now = next
			var d limit.Decision
			s, d = checkTake(t, s, l, sp, now, st.cost)
			if st.cost < 1 || st.cost > c {
				continue
			}
			real := now.UnixMicro()
			if stepped {
				real -= delta.Microseconds()
				if !touched {
					// A state is rebased when a request finds it ahead.
					anchor, touched = now, true
				}
			}
			if d.Allowed {
				adm = append(adm, admission{real, st.cost})
				if stepped {
					anchor = now
				}
			}
			if !stepped || wraps {
				continue
			}
			if d.Allowed && isBucket(l.Algorithm) {
				continue
			}
			if !d.Allowed && now.Add(d.RetryAfter).Sub(anchor) > bound {
				t.Fatalf("Take(%v, cost %d) %v after the step of %v (first request or last charge %v after it) = %+v: waits until %v after that, want at most %v",
					l, st.cost, now.Sub(stepAt), delta, anchor.Sub(stepAt), d, now.Add(d.RetryAfter).Sub(anchor), bound)
			}
			if av := available(t, s, l, anchor.Add(bound)); av != c {
				t.Fatalf("%v after the step of %v: left alone until %v after the first request or the last charge since, admits %d, want %d",
					l, delta, bound, av, c)
			}
		}
		checkAdmitted(t, l, sp, adm, extra, delta)
	})
}

// checkAdmitted checks the units admitted over real time against what the
// limit allows, plus extra: for a bucket, C plus the refill over any span;
// for a window, within less than a period, 2×Rate for FixedWindow and
// SlidingWindowCounter (two windows), Rate for SlidingWindowLog.
func checkAdmitted(t *testing.T, l limit.Limit, sp algo.Spec, adm []admission, extra int64, delta time.Duration) {
	t.Helper()
	for i := range adm {
		var sum int64
		for j := i; j < len(adm); j++ {
			sum += adm[j].n
			span := adm[j].real - adm[i].real
			var most float64
			if isBucket(l.Algorithm) {
				// Quanta elapsed, plus one for each end's rounding.
				q := float64(span)/float64(sp.Q) + 2
				most = float64(sp.C+extra) + q*float64(sp.R)/float64(sp.P) + 1
			} else {
				if span >= l.Period.Microseconds() {
					break
				}
				k := int64(2)
				if l.Algorithm == limit.SlidingWindowLog {
					k = 1
				}
				most = float64(k*sp.R + extra)
			}
			if float64(sum) > most {
				t.Fatalf("%v with a step of %v admitted %d units within %v of real time, want at most %.0f (extra %d)",
					l, delta, sum, time.Duration(span)*µs, most, extra)
			}
		}
	}
}
