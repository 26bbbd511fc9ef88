// Package conformance holds the table of vectors that every implementation of
// the algorithms (package limit, package local, package remote on miniredis
// and on real redis-server) must reproduce. The expected figures were worked
// out by hand from the semantics in package limit's documentation.
package conformance

import (
	"time"

	"github.com/hybridlimit/hybridlimit/limit"
)

// Base is the instant every vector's offsets count from: a whole day of Unix
// time, so windows of a second, a minute or an hour start on it.
var Base = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Vector is a sequence of requests for one key against Limits, or, from
// step i on, against Changes[i] when it is set: a limit that changes.
type Vector struct {
	Name    string                // the subtest's name, "Algorithm/case"; also the key
	Limits  []limit.Limit         // the limits of every request
	Steps   []Step                // the requests, in time order
	Changes map[int][]limit.Limit // step index -> the limits from that step on
}

// Step is one request at Base+At, and what it must return.
type Step struct {
	At   time.Duration // the request's instant, after Base
	Cost int64         // the units asked for
	Want Want          // the outcome every implementation must give
}

// Want is the expected outcome: limit.Decision's fields, the binding limit
// and the error.
type Want struct {
	Allowed    bool          // limit.Decision.Allowed
	Remaining  int64         // limit.Decision.Remaining
	RetryAfter time.Duration // limit.Decision.RetryAfter
	ResetAfter time.Duration // limit.Decision.ResetAfter
	Delay      time.Duration // limit.Decision.Delay
	Binding    int           // the index of the binding limit
	Err        error         // when set, the sentinel the request fails with (nothing consumed)
}

// Tolerance is how far a remote implementation's durations may be from the
// vector's; the in-process ones must match exactly.
const Tolerance = time.Millisecond

const (
	ms = time.Millisecond
	s  = time.Second
	m  = time.Minute
	h  = time.Hour
	µs = time.Microsecond
)

func ok(rem int64, reset time.Duration) Want {
	return Want{Allowed: true, Remaining: rem, ResetAfter: reset}
}

func deny(rem int64, retry, reset time.Duration) Want {
	return Want{Remaining: rem, RetryAfter: retry, ResetAfter: reset}
}

func bad(err error) Want { return Want{Err: err} }

func lim(a limit.Algorithm, rate int64, period time.Duration, burst int64) limit.Limit {
	return limit.Limit{Algorithm: a, Rate: rate, Period: period, Burst: burst}
}

const maxRate = int64(limit.MaxRate)

// Vectors is the table: the basic vectors, then those of clock steps and
// of limits that change.
var Vectors = append(append(basic[:len(basic):len(basic)], clockSteps...), changes...)

var basic = []Vector{
	{
		Name:   "TokenBucket/basic",
		Limits: []limit.Limit{limit.PerSecond(10)},
		Steps: []Step{
			{0, 1, ok(9, 100*ms)},
			{0, 9, ok(0, s)},
			{0, 1, deny(0, 100*ms, s)},
			{50 * ms, 1, deny(0, 50*ms, 950*ms)},
			{100 * ms, 1, ok(0, s)},
			{100 * ms, 11, bad(limit.ErrCostExceedsLimit)},
			{100 * ms, 0, bad(limit.ErrInvalidCost)},
			{100 * ms, -3, bad(limit.ErrInvalidCost)},
			{10 * s, 10, ok(0, s)}, // long idle: full again, nothing lost to the errors
			{10*s + 1*µs, 1, deny(0, 100*ms-1*µs, s-1*µs)},
		},
	},
	{
		Name:   "TokenBucket/backwards",
		Limits: []limit.Limit{limit.PerSecond(10)},
		Steps: []Step{
			{s, 5, ok(5, 500*ms)},
			// 100ms earlier the bucket held one token less.
			{900 * ms, 1, ok(3, 700*ms)},
			{s, 1, ok(3, 700*ms)},
			{s, 3, ok(0, s)},
			// 500ms earlier than the last charge the bucket would be "more
			// than empty": the clock went back, and the bucket is empty as
			// of now (and stored so), refilling from 500ms.
			{500 * ms, 1, deny(0, 100*ms, s)},
			{600 * ms, 1, ok(0, s)},
			{1100 * ms, 1, ok(4, 600*ms)},
		},
	},
	{
		Name:   "TokenBucket/burst",
		Limits: []limit.Limit{lim(limit.TokenBucket, 1, s, 3)},
		Steps: []Step{
			{0, 3, ok(0, 3*s)},
			{0, 1, deny(0, s, 3*s)},
			{1500 * ms, 1, ok(0, 2500*ms)},
			{1500 * ms, 4, bad(limit.ErrCostExceedsLimit)},
			{24 * time.Hour, 2, ok(1, 2*s)},
		},
	},
	{
		Name:   "LeakyBucket/shaping",
		Limits: []limit.Limit{lim(limit.LeakyBucket, 2, s, 3)},
		Steps: []Step{
			{0, 1, ok(2, 500*ms)},
			{0, 1, Want{Allowed: true, Remaining: 1, ResetAfter: s, Delay: 500 * ms}},
			{0, 1, Want{Allowed: true, Remaining: 0, ResetAfter: 1500 * ms, Delay: s}},
			{0, 1, deny(0, 500*ms, 1500*ms)},
			{250 * ms, 1, deny(0, 250*ms, 1250*ms)},
			{500 * ms, 1, Want{Allowed: true, Remaining: 0, ResetAfter: 1500 * ms, Delay: s}},
			{500 * ms, 4, bad(limit.ErrCostExceedsLimit)},
			{time.Hour, 3, Want{Allowed: true, Remaining: 0, ResetAfter: 1500 * ms}},
		},
	},
	{
		Name:   "FixedWindow/boundaries",
		Limits: []limit.Limit{lim(limit.FixedWindow, 3, s, 0)},
		Steps: []Step{
			{0, 2, ok(1, s)},
			{s - µs, 1, ok(0, µs)},
			{s - µs, 1, deny(0, µs, µs)},
			{s, 3, ok(0, s)},
			{1500 * ms, 1, deny(0, 500*ms, 500*ms)},
			{1500 * ms, 4, bad(limit.ErrCostExceedsLimit)},
			// Backwards by less than a period: no time passed since the last
			// charge, at 1s; the durations count from now.
			{500 * ms, 1, deny(0, 1500*ms, 1500*ms)},
			{5 * s, 1, ok(2, s)},
		},
	},
	{
		Name:   "SlidingWindowLog/exact",
		Limits: []limit.Limit{lim(limit.SlidingWindowLog, 3, s, 0)},
		Steps: []Step{
			{0, 1, ok(2, s)},
			{0, 1, ok(1, s)}, // two events in one microsecond
			{500 * ms, 1, ok(0, s)},
			{500 * ms, 1, deny(0, 500*ms, s)},
			{s, 1, ok(1, s)}, // the two events at 0 left at exactly 1s
			{s, 2, deny(1, 500*ms, s)},
			{s, 4, bad(limit.ErrCostExceedsLimit)},
			{900 * ms, 1, ok(0, 1100*ms)}, // backwards: counted as at 1s, leaving at 2s
			{1500*ms + 1*µs, 1, ok(0, s)},
			{1500*ms + 1*µs, 1, deny(0, 500*ms-1*µs, s)},
			{10 * s, 3, ok(0, s)},
		},
	},
	{
		Name:   "SlidingWindowCounter/weighted",
		Limits: []limit.Limit{lim(limit.SlidingWindowCounter, 10, s, 0)},
		Steps: []Step{
			{0, 6, ok(4, 2*s)},
			{500 * ms, 4, ok(0, 1500*ms)},
			{1200 * ms, 1, ok(1, 1800*ms)},
			{1200 * ms, 2, deny(1, 100*ms, 1800*ms)},
			{1300 * ms, 2, ok(0, 1700*ms)},
			// 6.5 + 3 + 1 = 10.5 > 10: a floored estimate would allow it.
			{1350 * ms, 1, deny(0, 50*ms, 1650*ms)},
			{2500 * ms, 8, ok(0, 1500*ms)},
			// Backwards: counted as at 2.5s; the durations count from now.
			{2 * s, 1, deny(0, 666667*µs, 2*s)},
			{4500 * ms, 10, ok(0, 1500*ms)},
			{5 * s, 10, deny(0, s, s)},
			{5 * s, 11, bad(limit.ErrCostExceedsLimit)},
		},
	},
	{
		Name:   "TokenBucket/largest-rate",
		Limits: []limit.Limit{limit.PerSecond(maxRate)},
		Steps: []Step{
			{0, maxRate, ok(0, s)},
			{ms, 1 << 30, ok(25769803, s)},
			{ms + 500*µs, 1 << 30, deny(25769803, 500*µs, 999500*µs)},
		},
	},
	{
		Name:   "TokenBucket/largest-period",
		Limits: []limit.Limit{lim(limit.TokenBucket, 1000, limit.MaxPeriod, 0)},
		Steps: []Step{
			{0, 1000, ok(0, limit.MaxPeriod)},
			{limit.MaxPeriod/1000 - 100*µs, 1, deny(0, 100*µs, limit.MaxPeriod-limit.MaxPeriod/1000+100*µs)},
			{limit.MaxPeriod / 1000, 1, ok(0, limit.MaxPeriod)},
		},
	},
	{
		Name:   "FixedWindow/largest-period",
		Limits: []limit.Limit{lim(limit.FixedWindow, maxRate, limit.MaxPeriod, 0)},
		Steps: []Step{
			// Windows of 366 days from the Unix epoch: this one ends 42 days after Base.
			{0, maxRate - 1, ok(1, 42*24*time.Hour)},
			{time.Hour, 2, deny(1, 41*24*time.Hour+23*time.Hour, 41*24*time.Hour+23*time.Hour)},
			{42 * 24 * time.Hour, maxRate, ok(0, limit.MaxPeriod)},
		},
	},
	{
		Name:   "SlidingWindowCounter/largest-rate",
		Limits: []limit.Limit{lim(limit.SlidingWindowCounter, maxRate, s, 0)},
		Steps: []Step{
			{0, maxRate, ok(0, 2*s)},
			{1500 * ms, 1 << 39, ok(0, 1500*ms)}, // exactly at the limit: 2^40*0.5 + 2^39
			{1500*ms + 1*µs, 1, deny(0, 999*µs, 1500*ms-1*µs)},
		},
	},
	{
		Name: "Several/one-denies",
		Limits: []limit.Limit{
			lim(limit.FixedWindow, 4, 10*s, 0),
			limit.PerSecond(2),
		},
		Steps: []Step{
			{0, 2, Want{Allowed: true, Remaining: 0, ResetAfter: s, Binding: 1}},
			{0, 1, Want{Remaining: 0, RetryAfter: 500 * ms, ResetAfter: s, Binding: 1}},
			// The fixed window was not charged by the denied request: 2+2 <= 4.
			{s, 2, Want{Allowed: true, Remaining: 0, ResetAfter: 9 * s, Binding: 0}},
			{1500 * ms, 1, Want{Remaining: 0, RetryAfter: 8500 * ms, ResetAfter: 8500 * ms, Binding: 0}},
			{1500 * ms, 3, bad(limit.ErrCostExceedsLimit)},
			{10 * s, 2, Want{Allowed: true, Remaining: 0, ResetAfter: s, Binding: 1}},
		},
	},
	{
		Name: "Several/second-and-minute",
		Limits: []limit.Limit{
			limit.PerSecond(2),
			limit.PerMinute(3),
		},
		Steps: []Step{
			{0, 1, Want{Allowed: true, Remaining: 1, ResetAfter: 500 * ms, Binding: 0}},
			{0, 1, Want{Allowed: true, Remaining: 0, ResetAfter: s, Binding: 0}},
			{s, 1, Want{Allowed: true, Remaining: 0, ResetAfter: 59 * s, Binding: 1}},
			{2 * s, 1, Want{Remaining: 0, RetryAfter: 18 * s, ResetAfter: 58 * s, Binding: 1}},
			{20 * s, 1, Want{Allowed: true, Remaining: 0, ResetAfter: 60 * s, Binding: 1}},
		},
	},
	{
		Name: "Several/leaky-delay",
		Limits: []limit.Limit{
			limit.PerMinute(100),
			lim(limit.LeakyBucket, 10, s, 5),
		},
		Steps: []Step{
			{0, 1, Want{Allowed: true, Remaining: 4, ResetAfter: 100 * ms, Binding: 1}},
			{0, 2, Want{Allowed: true, Remaining: 2, ResetAfter: 300 * ms, Delay: 100 * ms, Binding: 1}},
			{0, 3, Want{Remaining: 2, RetryAfter: 100 * ms, ResetAfter: 300 * ms, Binding: 1}},
			{100 * ms, 3, Want{Allowed: true, Remaining: 0, ResetAfter: 500 * ms, Delay: 200 * ms, Binding: 1}},
		},
	},
}
