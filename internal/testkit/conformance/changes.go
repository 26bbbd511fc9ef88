package conformance

import "github.com/hybridlimit/hybridlimit/limit"

// named returns l with name n.
func named(n string, l limit.Limit) limit.Limit {
	l.Name = n
	return l
}

// changes are the vectors of a limit that changes between two requests, as a
// reload of a rules file changes it. A named limit keeps its state: the
// units in use at the change stay in use, charged afresh at the change and
// at most the new capacity (algo.Spec.Convert). An unnamed limit that changes is
// another limit, whose state starts full.
var changes = []Vector{
	{
		Name:   "TokenBucket/named-lowered-then-raised",
		Limits: []limit.Limit{named("api", limit.PerMinute(10))},
		Steps: []Step{
			{0, 8, ok(2, 48*s)},
			// 8 in use, at most 5: empty, refilling at 12 s a token.
			{0, 1, deny(0, 12*s, m)},
			{12 * s, 1, ok(0, m)},
			// 5 in use of 20: 15 left, 3 s a token.
			{12 * s, 15, ok(0, m)},
			{12 * s, 1, deny(0, 3*s, m)},
		},
		Changes: map[int][]limit.Limit{
			1: {named("api", limit.PerMinute(5))},
			3: {named("api", limit.PerMinute(20))},
		},
	},
	{
		Name:   "TokenBucket/unnamed-change-starts-full",
		Limits: []limit.Limit{limit.PerMinute(10)},
		Steps: []Step{
			{0, 8, ok(2, 48*s)},
			{0, 1, ok(4, 12*s)},
		},
		Changes: map[int][]limit.Limit{
			1: {limit.PerMinute(5)},
		},
	},
	{
		Name:   "TokenBucket/named-burst-and-period",
		Limits: []limit.Limit{named("b", lim(limit.TokenBucket, 1, s, 3))},
		Steps: []Step{
			{0, 2, ok(1, 2*s)},
			// 2 in use of a burst of 10 at 10/min: 8 left, 6 s a token.
			{500 * ms, 8, ok(0, m)},
			{500 * ms, 1, deny(0, 6*s, m)},
		},
		Changes: map[int][]limit.Limit{
			1: {named("b", lim(limit.TokenBucket, 10, m, 10))},
		},
	},
	{
		Name:   "LeakyBucket/named-lowered",
		Limits: []limit.Limit{named("q", lim(limit.LeakyBucket, 10, m, 0))},
		Steps: []Step{
			{0, 4, ok(6, 24*s)},
			// 4 queued of 5 at 5/min: one more fits, behind 48 s of work.
			{0, 1, Want{Allowed: true, Remaining: 0, ResetAfter: m, Delay: 48 * s}},
			{0, 1, deny(0, 12*s, m)},
		},
		Changes: map[int][]limit.Limit{
			1: {named("q", lim(limit.LeakyBucket, 5, m, 0))},
		},
	},
	{
		Name:   "FixedWindow/named-lowered-then-longer-period",
		Limits: []limit.Limit{named("w", lim(limit.FixedWindow, 10, m, 0))},
		Steps: []Step{
			{30 * s, 8, ok(2, 30*s)},
			// 8 in use, at most 5, in the window that ends at 1m.
			{30 * s, 1, deny(0, 30*s, 30*s)},
			{m, 5, ok(0, m)},
			// 5 in use of 100 an hour, in the hour's window.
			{m, 95, ok(0, h-m)},
			{m, 1, deny(0, h-m, h-m)},
		},
		Changes: map[int][]limit.Limit{
			1: {named("w", lim(limit.FixedWindow, 5, m, 0))},
			3: {named("w", lim(limit.FixedWindow, 100, h, 0))},
		},
	},
	{
		Name:   "SlidingWindowLog/named-lowered",
		Limits: []limit.Limit{named("l", lim(limit.SlidingWindowLog, 3, m, 0))},
		Steps: []Step{
			{0, 2, ok(1, m)},
			// 2 in use of 2: charged afresh at 10 s, they leave at 70 s.
			{10 * s, 1, deny(0, m, m)},
			{70 * s, 1, ok(1, m)},
		},
		Changes: map[int][]limit.Limit{
			1: {named("l", lim(limit.SlidingWindowLog, 2, m, 0))},
		},
	},
	{
		Name:   "SlidingWindowCounter/named-lowered",
		Limits: []limit.Limit{named("c", lim(limit.SlidingWindowCounter, 10, m, 0))},
		Steps: []Step{
			{0, 6, ok(4, 2*m)},
			// 6 in use, at most 4, in the current window: a unit fits once
			// a quarter of the next window has passed (4 × 3/4 + 1 <= 4).
			{0, 1, deny(0, 75*s, 2*m)},
			{75 * s, 1, ok(0, 105*s)},
		},
		Changes: map[int][]limit.Limit{
			1: {named("c", lim(limit.SlidingWindowCounter, 4, m, 0))},
		},
	},
	{
		Name:   "TokenBucket/named-one-of-two-changes",
		Limits: []limit.Limit{named("min", limit.PerMinute(10)), named("hour", limit.PerHour(100))},
		Steps: []Step{
			{0, 6, Want{Allowed: true, Remaining: 4, ResetAfter: 36 * s, Binding: 0}},
			// The minute's 6 in use become 5 of 5; the hour keeps its 6.
			{0, 1, Want{RetryAfter: 12 * s, ResetAfter: m, Binding: 0}},
			{12 * s, 1, Want{Allowed: true, Remaining: 0, ResetAfter: m, Binding: 0}},
		},
		Changes: map[int][]limit.Limit{
			1: {named("min", limit.PerMinute(5)), named("hour", limit.PerHour(100))},
		},
	},
	{
		Name:   "named/invalid",
		Limits: []limit.Limit{named("x", limit.PerMinute(10)), named("x", limit.PerHour(100))},
		Steps: []Step{
			{0, 1, bad(limit.ErrInvalidLimit)},
			{0, 1, bad(limit.ErrInvalidLimit)},
			{0, 1, bad(limit.ErrInvalidLimit)},
			{0, 10, ok(0, m)}, // nothing was consumed by the errors
		},
		Changes: map[int][]limit.Limit{
			1: {named(string(make([]byte, limit.MaxNameLen+1)), limit.PerMinute(10))},
			2: {named("bad\nname", limit.PerMinute(10))},
			3: {named("x", limit.PerMinute(10))},
		},
	},
}
