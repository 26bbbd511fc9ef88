package limit_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hybridlimit/hybridlimit/internal/algo"
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

// clone returns a copy of s that shares no event storage with it.
func clone(s limit.State) limit.State { return limit.Clone(s) }

func cloneAll(states []limit.State) []limit.State {
	out := make([]limit.State, len(states))
	for i, s := range states {
		out[i] = clone(s)
	}
	return out
}

// mustTake takes cost from s and fails the test on an error or a denial.
func mustTake(t *testing.T, s limit.State, l limit.Limit, now time.Time, cost int64) limit.State {
	t.Helper()
	next, d, err := limit.Take(s, l, now, cost)
	if err != nil || !d.Allowed {
		t.Fatalf("Take(%v, at %v, cost %d) = %+v, %v, want allowed", l, now.Sub(base), cost, d, err)
	}
	return next
}

func TestValidateRejects(t *testing.T) {
	tests := []struct {
		name string
		l    limit.Limit
		msg  string // a part of the error message that says what is wrong
	}{
		{"rate zero", limit.Limit{Period: sec}, "rate 0"},
		{"rate negative", limit.Limit{Rate: -1, Period: sec}, "rate -1"},
		{"rate above MaxRate", limit.Limit{Rate: maxRate + 1, Period: sec}, "rate"},
		{"rate above MaxRate FixedWindow", limit.Limit{Algorithm: limit.FixedWindow, Rate: maxRate + 1, Period: sec}, "rate"},
		{"period zero", limit.Limit{Rate: 1}, "period"},
		{"period negative", limit.Limit{Rate: 1, Period: -sec}, "period"},
		{"period 500ns", limit.Limit{Rate: 1, Period: 500 * time.Nanosecond}, "period"},
		{"period 1500ns", limit.Limit{Rate: 1, Period: 1500 * time.Nanosecond}, "whole number of microseconds"},
		{"period 1s+1ns", limit.Limit{Algorithm: limit.FixedWindow, Rate: 1, Period: sec + 1}, "whole number of microseconds"},
		{"period above MaxPeriod", limit.Limit{Rate: 1, Period: limit.MaxPeriod + µs}, "period"},
		{"burst negative", limit.Limit{Rate: 1, Period: sec, Burst: -1}, "burst -1"},
		{"burst above MaxRate", limit.Limit{Rate: maxRate, Period: sec, Burst: maxRate + 1}, "burst"},
		{"burst below rate on FixedWindow", limit.Limit{Algorithm: limit.FixedWindow, Rate: 10, Period: sec, Burst: 5}, "takes none"},
		{"burst above rate on FixedWindow", limit.Limit{Algorithm: limit.FixedWindow, Rate: 10, Period: sec, Burst: 11}, "takes none"},
		{"burst on SlidingWindowLog", limit.Limit{Algorithm: limit.SlidingWindowLog, Rate: 10, Period: sec, Burst: 1}, "takes none"},
		{"burst on SlidingWindowCounter", limit.Limit{Algorithm: limit.SlidingWindowCounter, Rate: 10, Period: sec, Burst: 20}, "takes none"},
		{"SlidingWindowLog rate above MaxLogRate", limit.Limit{Algorithm: limit.SlidingWindowLog, Rate: limit.MaxLogRate + 1, Period: sec}, "SlidingWindowLog"},
		{"unknown algorithm 5", limit.Limit{Algorithm: 5, Rate: 1, Period: sec}, "unknown algorithm 5"},
		{"unknown algorithm 255", limit.Limit{Algorithm: 255, Rate: 1, Period: sec}, "unknown algorithm 255"},
		// 100 units at 1 per 366 days take 36600 days to refill: above MaxFill.
		{"TokenBucket refill above MaxFill", limit.Limit{Rate: 1, Period: limit.MaxPeriod, Burst: 100}, "refill"},
		{"LeakyBucket refill above MaxFill", limit.Limit{Algorithm: limit.LeakyBucket, Rate: 1, Period: limit.MaxPeriod, Burst: 100}, "refill"},
		{"TokenBucket burst MaxRate at 1 per hour", limit.Limit{Rate: 1, Period: time.Hour, Burst: maxRate}, "refill"},
		// Every check but the quantum passes: 366 days is 316224×10^8 µs, so
		// the coarsest quantum is 100 s, and 2^40 × 316224 > 2^50.
		{"no exact quantum MaxRate per MaxPeriod", limit.Limit{Rate: maxRate, Period: limit.MaxPeriod}, "cannot be computed exactly"},
		{"no exact quantum SlidingWindowCounter", limit.Limit{Algorithm: limit.SlidingWindowCounter, Rate: maxRate, Period: limit.MaxPeriod}, "cannot be computed exactly"},
		// 1025 µs has no factor of ten: the quantum must be 1 µs.
		{"no exact quantum odd period", limit.Limit{Rate: maxRate, Period: 1025 * µs}, "cannot be computed exactly"},
		{"no exact quantum LeakyBucket", limit.Limit{Algorithm: limit.LeakyBucket, Rate: 1 << 31, Period: 1000001 * µs}, "cannot be computed exactly"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.l.Validate()
			if !errors.Is(err, limit.ErrInvalidLimit) {
				t.Fatalf("%#v.Validate() = %v, want %v", tt.l, err, limit.ErrInvalidLimit)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("%#v.Validate() = %q, want it to mention %q", tt.l, err, tt.msg)
			}
		})
	}
}

func TestCheckCost(t *testing.T) {
	tests := []struct {
		l    limit.Limit
		cost int64
		want error
	}{
		{limit.PerSecond(10), 1, nil},
		{limit.PerSecond(10), 10, nil},
		{limit.PerSecond(10), 11, limit.ErrCostExceedsLimit},
		{limit.PerSecond(10), 0, limit.ErrInvalidCost},
		{limit.PerSecond(10), -1, limit.ErrInvalidCost},
		{limit.PerSecond(10), -1 << 63, limit.ErrInvalidCost},
		{limit.Limit{Rate: 1, Period: sec, Burst: 3}, 3, nil},
		{limit.Limit{Rate: 1, Period: sec, Burst: 3}, 4, limit.ErrCostExceedsLimit},
		{limit.Limit{Rate: 10, Period: sec, Burst: 3}, 4, limit.ErrCostExceedsLimit},
		{limit.Limit{Algorithm: limit.LeakyBucket, Rate: 2, Period: sec, Burst: 5}, 5, nil},
		{limit.Limit{Algorithm: limit.LeakyBucket, Rate: 2, Period: sec, Burst: 5}, 6, limit.ErrCostExceedsLimit},
		{limit.Limit{Algorithm: limit.FixedWindow, Rate: 4, Period: sec}, 4, nil},
		{limit.Limit{Algorithm: limit.FixedWindow, Rate: 4, Period: sec, Burst: 4}, 5, limit.ErrCostExceedsLimit},
		{limit.Limit{Algorithm: limit.SlidingWindowLog, Rate: 4, Period: sec}, 5, limit.ErrCostExceedsLimit},
		{limit.Limit{Algorithm: limit.SlidingWindowCounter, Rate: 4, Period: sec}, 5, limit.ErrCostExceedsLimit},
		{limit.PerSecond(maxRate), maxRate, nil},
		{limit.PerSecond(maxRate), maxRate + 1, limit.ErrCostExceedsLimit},
	}
	for _, tt := range tests {
		err := tt.l.CheckCost(tt.cost)
		if tt.want == nil && err != nil || !errors.Is(err, tt.want) {
			t.Errorf("%v.CheckCost(%d) = %v, want %v", tt.l, tt.cost, err, tt.want)
		}
	}
}

func TestPerConstructors(t *testing.T) {
	tests := []struct {
		got, want limit.Limit
	}{
		{limit.PerSecond(5), limit.Limit{Algorithm: limit.TokenBucket, Rate: 5, Period: sec}},
		{limit.PerMinute(100), limit.Limit{Algorithm: limit.TokenBucket, Rate: 100, Period: time.Minute}},
		{limit.PerHour(1000), limit.Limit{Algorithm: limit.TokenBucket, Rate: 1000, Period: time.Hour}},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %#v, want %#v", tt.got, tt.want)
		}
		if err := tt.got.Validate(); err != nil {
			t.Errorf("%v.Validate() = %v, want nil", tt.got, err)
		}
		if c := tt.got.Capacity(); c != tt.want.Rate {
			t.Errorf("%v.Capacity() = %d, want the rate %d", tt.got, c, tt.want.Rate)
		}
	}
}

func TestCapacity(t *testing.T) {
	tests := []struct {
		l    limit.Limit
		want int64
	}{
		{limit.Limit{Rate: 10, Period: sec}, 10},
		{limit.Limit{Rate: 10, Period: sec, Burst: 3}, 3},
		{limit.Limit{Rate: 10, Period: sec, Burst: 30}, 30},
		{limit.Limit{Algorithm: limit.LeakyBucket, Rate: 10, Period: sec}, 10},
		{limit.Limit{Algorithm: limit.LeakyBucket, Rate: 10, Period: sec, Burst: 5}, 5},
		{limit.Limit{Algorithm: limit.FixedWindow, Rate: 10, Period: sec}, 10},
		{limit.Limit{Algorithm: limit.FixedWindow, Rate: 10, Period: sec, Burst: 10}, 10},
		{limit.Limit{Algorithm: limit.FixedWindow, Rate: 10, Period: sec, Burst: 5}, 10}, // invalid; Burst ignored
		{limit.Limit{Algorithm: limit.SlidingWindowLog, Rate: 7, Period: sec}, 7},
		{limit.Limit{Algorithm: limit.SlidingWindowCounter, Rate: 7, Period: sec, Burst: 7}, 7},
	}
	for _, tt := range tests {
		if got := tt.l.Capacity(); got != tt.want {
			t.Errorf("%#v.Capacity() = %d, want %d", tt.l, got, tt.want)
		}
	}
}

// TestLongestDelay: a LeakyBucket's longest delay is the Delay Take gives
// a unit that finds Capacity-1 units queued; the other algorithms and an
// invalid limit delay nothing.
func TestLongestDelay(t *testing.T) {
	for _, l := range []limit.Limit{
		{Algorithm: limit.LeakyBucket, Rate: 10, Period: sec, Burst: 21},
		{Algorithm: limit.LeakyBucket, Rate: 3, Period: time.Minute},
		{Algorithm: limit.LeakyBucket, Rate: 1000, Period: sec, Burst: 1},
	} {
		var s limit.State
		for range l.Capacity() - 1 {
			var d limit.Decision
			var err error
			if s, d, err = limit.Take(s, l, base, 1); err != nil || !d.Allowed {
				t.Fatalf("%v: filling the queue: %+v, %v", l, d, err)
			}
		}
		_, d, err := limit.Take(s, l, base, 1)
		if err != nil || !d.Allowed {
			t.Fatalf("%v: the last unit: %+v, %v", l, d, err)
		}
		if got := l.LongestDelay(); got != d.Delay || got <= 0 && l.Capacity() > 1 {
			t.Errorf("%v.LongestDelay() = %v, want the last unit's Delay %v", l, got, d.Delay)
		}
	}
	for _, l := range []limit.Limit{
		{Rate: 10, Period: sec, Burst: 21},
		{Algorithm: limit.SlidingWindowLog, Rate: 10, Period: sec},
		{Algorithm: limit.LeakyBucket, Rate: 0, Period: sec},
	} {
		if got := l.LongestDelay(); got != 0 {
			t.Errorf("%v.LongestDelay() = %v, want 0", l, got)
		}
	}
}

func TestAlgorithm(t *testing.T) {
	tests := []struct {
		a     limit.Algorithm
		name  string
		valid bool
	}{
		{limit.TokenBucket, "TokenBucket", true},
		{limit.LeakyBucket, "LeakyBucket", true},
		{limit.FixedWindow, "FixedWindow", true},
		{limit.SlidingWindowLog, "SlidingWindowLog", true},
		{limit.SlidingWindowCounter, "SlidingWindowCounter", true},
		{5, "Algorithm(5)", false},
		{255, "Algorithm(255)", false},
	}
	for _, tt := range tests {
		if got := tt.a.String(); got != tt.name {
			t.Errorf("Algorithm(%d).String() = %q, want %q", uint8(tt.a), got, tt.name)
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

// TestAlgorithmIDs: each Algorithm is the ID of its transitions in
// internal/algo, with the same name.
func TestAlgorithmIDs(t *testing.T) {
	want := map[limit.Algorithm]algo.ID{
		limit.TokenBucket:          algo.TokenBucket,
		limit.LeakyBucket:          algo.LeakyBucket,
		limit.FixedWindow:          algo.FixedWindow,
		limit.SlidingWindowLog:     algo.SlidingWindowLog,
		limit.SlidingWindowCounter: algo.SlidingWindowCounter,
	}
	for _, a := range algorithms {
		if id := algo.ID(a); id != want[a] || id.String() != a.String() {
			t.Errorf("algo.ID(%v) = %v (%d), want %v (%d)", a, id, id, want[a], want[a])
		}
	}
	if n := len(algorithms); algo.ID(n).Valid() || !algo.ID(n-1).Valid() {
		t.Errorf("algo knows other than the %d algorithms of package limit", n)
	}
}

func TestLimitString(t *testing.T) {
	tests := []struct {
		l    limit.Limit
		want string
	}{
		{limit.PerMinute(100), "TokenBucket(100/1m0s, burst 100)"},
		{limit.Limit{Rate: 10, Period: sec, Burst: 3}, "TokenBucket(10/1s, burst 3)"},
		{limit.Limit{Algorithm: limit.LeakyBucket, Rate: 2, Period: 1500 * ms, Burst: 5}, "LeakyBucket(2/1.5s, burst 5)"},
		{limit.Limit{Algorithm: limit.FixedWindow, Rate: 10, Period: sec}, "FixedWindow(10/1s)"},
		{limit.Limit{Algorithm: limit.SlidingWindowLog, Rate: 3, Period: time.Hour}, "SlidingWindowLog(3/1h0m0s)"},
		{limit.Limit{Algorithm: limit.SlidingWindowCounter, Rate: 10, Period: sec, Burst: 10}, "SlidingWindowCounter(10/1s)"},
		{limit.Limit{Algorithm: 9, Rate: 1, Period: sec}, "Algorithm(9)(1/1s)"},
	}
	for _, tt := range tests {
		if got := tt.l.String(); got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.l, got, tt.want)
		}
	}
}

// used returns a state of l with some units charged at base and base+100ms
// (two events for SlidingWindowLog), and the time of the last charge.
func used(t *testing.T, l limit.Limit) (limit.State, time.Time) {
	t.Helper()
	var s limit.State
	s = mustTake(t, s, l, base, 2)
	now := base.Add(100 * ms)
	return mustTake(t, s, l, now, 1), now
}

func TestTakeUnchangedOnErrorAndDenial(t *testing.T) {
	for _, a := range algorithms {
		t.Run(a.String(), func(t *testing.T) {
			l := limit.Limit{Algorithm: a, Rate: 5, Period: sec}
			s, now := used(t, l)
			before := clone(s)
			bad := []struct {
				name string
				l    limit.Limit
				cost int64
				want error
			}{
				{"invalid limit", limit.Limit{Algorithm: a, Rate: 0, Period: sec}, 1, limit.ErrInvalidLimit},
				{"unknown algorithm", limit.Limit{Algorithm: 7, Rate: 5, Period: sec}, 1, limit.ErrInvalidLimit},
				{"cost 0", l, 0, limit.ErrInvalidCost},
				{"cost -1", l, -1, limit.ErrInvalidCost},
				{"cost above capacity", l, 6, limit.ErrCostExceedsLimit},
			}
			for _, b := range bad {
				next, d, err := limit.Take(s, b.l, now, b.cost)
				if !errors.Is(err, b.want) {
					t.Errorf("%s: Take(%v, cost %d) error = %v, want %v", b.name, b.l, b.cost, err, b.want)
				}
				if !reflect.DeepEqual(next, before) || d != (limit.Decision{}) {
					t.Errorf("%s: Take(%v, cost %d) = %+v, %+v, want %+v unchanged and a zero Decision", b.name, b.l, b.cost, next, d, before)
				}
			}
			// Two units remain at now; three are denied.
			next, d, err := limit.Take(s, l, now, 3)
			if err != nil || d.Allowed {
				t.Fatalf("Take(%v, cost 3) = %+v, %v, want denied", l, d, err)
			}
			if d.Remaining != 2 || d.RetryAfter <= 0 {
				t.Errorf("Take(%v, cost 3) = %+v, want Remaining 2 and RetryAfter > 0", l, d)
			}
			if !reflect.DeepEqual(next, before) {
				t.Errorf("denied Take(%v, cost 3) returned %+v, want %+v unchanged", l, next, before)
			}
			if !reflect.DeepEqual(s, before) {
				t.Errorf("denied Take(%v, cost 3) changed its input to %+v, want %+v", l, s, before)
			}
		})
	}
}

func TestTakeAllErrors(t *testing.T) {
	limits := []limit.Limit{limit.PerSecond(2), limit.PerMinute(3)}
	tests := []struct {
		name   string
		states int
		limits []limit.Limit
		cost   int64
		want   error
	}{
		{"fewer states", 1, limits, 1, limit.ErrInvalidLimit},
		{"more states", 3, limits, 1, limit.ErrInvalidLimit},
		{"no limits", 0, nil, 1, limit.ErrInvalidLimit},
		{"bad first limit", 2, []limit.Limit{{Rate: 0, Period: sec}, limit.PerMinute(3)}, 1, limit.ErrInvalidLimit},
		{"bad last limit", 3, []limit.Limit{limit.PerSecond(2), limit.PerMinute(3), {Algorithm: limit.FixedWindow, Rate: 3, Period: sec, Burst: 1}}, 1, limit.ErrInvalidLimit},
		{"cost above one capacity", 2, []limit.Limit{limit.PerSecond(2), limit.PerMinute(3)}, 3, limit.ErrCostExceedsLimit},
		{"cost 0", 2, limits, 0, limit.ErrInvalidCost},
		{"a limit given twice", 2, []limit.Limit{limit.PerSecond(2), limit.PerSecond(2)}, 1, limit.ErrInvalidLimit},
		{"a limit given twice among three", 3, []limit.Limit{limit.PerSecond(2), limit.PerMinute(3), limit.PerSecond(2)}, 1, limit.ErrInvalidLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			states := make([]limit.State, tt.states)
			// Charge what can be charged, so that a change would show.
			for i := range min(len(states), len(tt.limits)) {
				if tt.limits[i].Validate() == nil {
					states[i] = mustTake(t, states[i], tt.limits[i], base, 1)
				}
			}
			before := cloneAll(states)
			d, _, err := limit.TakeAll(states, tt.limits, base.Add(ms), tt.cost)
			if !errors.Is(err, tt.want) {
				t.Fatalf("TakeAll(%d states, %v, cost %d) error = %v, want %v", tt.states, tt.limits, tt.cost, err, tt.want)
			}
			if d != (limit.Decision{}) || !reflect.DeepEqual(states, before) {
				t.Errorf("TakeAll(%d states, %v, cost %d) = %+v, states %+v, want a zero Decision, states %+v", tt.states, tt.limits, tt.cost, d, states, before)
			}
		})
	}
}

func TestCheckDistinct(t *testing.T) {
	fw := limit.Limit{Algorithm: limit.FixedWindow, Rate: 10, Period: sec}
	tests := []struct {
		limits []limit.Limit
		ok     bool
	}{
		{nil, true},
		{[]limit.Limit{limit.PerSecond(1)}, true},
		{[]limit.Limit{limit.PerSecond(1), limit.PerMinute(1), limit.PerHour(1)}, true},
		{[]limit.Limit{limit.PerSecond(1), limit.PerSecond(2)}, true},
		{[]limit.Limit{fw, {Algorithm: limit.SlidingWindowCounter, Rate: 10, Period: sec}}, true},
		{[]limit.Limit{limit.PerSecond(1), limit.PerSecond(1)}, false},
		{[]limit.Limit{fw, limit.PerMinute(1), fw}, false},
		{[]limit.Limit{limit.PerMinute(1), fw, limit.PerHour(1), fw}, false},
		{[]limit.Limit{{Rate: 0}, {Rate: 0}}, false}, // invalid, and given twice
	}
	for _, tt := range tests {
		err := limit.CheckDistinct(tt.limits)
		if tt.ok && err != nil || !tt.ok && !errors.Is(err, limit.ErrInvalidLimit) {
			t.Errorf("CheckDistinct(%v) = %v, want ok %v", tt.limits, err, tt.ok)
		}
	}
}
