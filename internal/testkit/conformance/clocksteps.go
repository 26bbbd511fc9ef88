package conformance

import "github.com/hybridlimit/hybridlimit/limit"

// clockSteps are the vectors of a clock stepped by an hour, as NTP or a
// failover to a replica steps a Redis server's clock: back after the limit
// was used, and forward then back. Every limit is 3 units per minute, so a
// fresh key that uses its limit is denied for at most a minute (two for
// SlidingWindowCounter). After a step no key is denied for longer than
// that plus one period (a bucket: plus nothing), every RetryAfter is
// truthful (a later step at At+RetryAfter with the same cost passes), and
// the forward step grants one burst at most. A denied step after the step
// back shows that the state was rewritten as of now: had it been left in
// the future, the key would be rebased again at every request and stay
// denied until the clock caught up.
var clockSteps = []Vector{
	{
		Name:   "TokenBucket/clock-back-1h",
		Limits: []limit.Limit{limit.PerMinute(3)},
		Steps: []Step{
			{h, 3, ok(0, m)},
			{h, 1, deny(0, 20*s, m)},
			// A deficit of more than the capacity cannot arise with a clock
			// that only goes forward: the bucket is empty as of now.
			{0, 1, deny(0, 20*s, m)},
			{10 * s, 1, deny(0, 10*s, 50*s)},
			{20 * s, 1, ok(0, m)},
			{80 * s, 3, ok(0, m)},
		},
	},
	{
		Name:   "TokenBucket/clock-forward-1h-and-back",
		Limits: []limit.Limit{limit.PerMinute(3)},
		Steps: []Step{
			{0, 3, ok(0, m)},
			{h, 3, ok(0, m)}, // the one extra burst
			{h, 1, deny(0, 20*s, m)},
			{s, 1, deny(0, 20*s, m)},
			{11 * s, 1, deny(0, 10*s, 50*s)},
			{21 * s, 1, ok(0, m)},
			{81 * s, 3, ok(0, m)},
		},
	},
	{
		Name:   "LeakyBucket/clock-back-1h",
		Limits: []limit.Limit{lim(limit.LeakyBucket, 3, m, 0)},
		Steps: []Step{
			{h, 3, ok(0, m)},
			{h, 1, deny(0, 20*s, m)},
			{0, 1, deny(0, 20*s, m)},
			{10 * s, 1, deny(0, 10*s, 50*s)},
			{20 * s, 1, Want{Allowed: true, Remaining: 0, ResetAfter: m, Delay: 40 * s}},
			{80 * s, 3, ok(0, m)},
		},
	},
	{
		Name:   "LeakyBucket/clock-forward-1h-and-back",
		Limits: []limit.Limit{lim(limit.LeakyBucket, 3, m, 0)},
		Steps: []Step{
			{0, 3, ok(0, m)},
			{h, 3, ok(0, m)},
			{h, 1, deny(0, 20*s, m)},
			{s, 1, deny(0, 20*s, m)},
			{11 * s, 1, deny(0, 10*s, 50*s)},
			{21 * s, 1, Want{Allowed: true, Remaining: 0, ResetAfter: m, Delay: 40 * s}},
			{81 * s, 3, ok(0, m)},
		},
	},
	{
		Name:   "FixedWindow/clock-back-1h",
		Limits: []limit.Limit{lim(limit.FixedWindow, 3, m, 0)},
		Steps: []Step{
			{h + 30*s, 3, ok(0, 30*s)},
			{h + 30*s, 1, deny(0, 30*s, 30*s)},
			// More than a period ahead: the count belongs to now's window.
			{30 * s, 1, deny(0, 30*s, 30*s)},
			{45 * s, 1, deny(0, 15*s, 15*s)},
			{m, 1, ok(2, m)},
		},
	},
	{
		Name:   "FixedWindow/clock-forward-1h-and-back",
		Limits: []limit.Limit{lim(limit.FixedWindow, 3, m, 0)},
		Steps: []Step{
			{30 * s, 3, ok(0, 30*s)},
			{h + 30*s, 3, ok(0, 30*s)},
			{h + 30*s, 1, deny(0, 30*s, 30*s)},
			{40 * s, 1, deny(0, 20*s, 20*s)},
			{50 * s, 1, deny(0, 10*s, 10*s)},
			{m, 1, ok(2, m)},
		},
	},
	{
		Name:   "FixedWindow/clock-back-1µs-across-a-boundary",
		Limits: []limit.Limit{lim(limit.FixedWindow, 3, m, 0)},
		Steps: []Step{
			{m, 3, ok(0, m)},
			// Less than a period back: no time passed, so the window of 1m
			// still holds its count (no second burst), and the durations
			// count from now.
			{m - µs, 1, deny(0, m+µs, m+µs)},
			{m - µs, 1, deny(0, m+µs, m+µs)},
			{2 * m, 1, ok(2, m)},
		},
	},
	{
		Name:   "SlidingWindowLog/clock-back-1h",
		Limits: []limit.Limit{lim(limit.SlidingWindowLog, 3, m, 0)},
		Steps: []Step{
			{h, 1, ok(2, m)},
			{h + 10*s, 2, ok(0, m)},
			{h + 10*s, 1, deny(0, 50*s, m)},
			// Events after now count as at now: they leave a period later.
			{10 * s, 1, deny(0, m, m)},
			{40 * s, 1, deny(0, 30*s, 30*s)},
			{70 * s, 1, ok(2, m)},
		},
	},
	{
		Name:   "SlidingWindowLog/clock-forward-1h-and-back",
		Limits: []limit.Limit{lim(limit.SlidingWindowLog, 3, m, 0)},
		Steps: []Step{
			{0, 3, ok(0, m)},
			{h, 3, ok(0, m)},
			{h, 1, deny(0, m, m)},
			{5 * s, 1, deny(0, m, m)},
			{35 * s, 1, deny(0, 30*s, 30*s)},
			{65 * s, 1, ok(2, m)},
		},
	},
	{
		Name:   "SlidingWindowCounter/clock-back-1h",
		Limits: []limit.Limit{lim(limit.SlidingWindowCounter, 3, m, 0)},
		Steps: []Step{
			{h + 30*s, 3, ok(0, 90*s)},
			{h + 30*s, 1, deny(0, 50*s, 90*s)},
			// More than a period ahead: rebased to now, current and
			// previous counts kept.
			{30 * s, 1, deny(0, 50*s, 90*s)},
			{65 * s, 1, deny(0, 15*s, 55*s)},
			{80 * s, 1, ok(0, 100*s)},
		},
	},
	{
		Name:   "SlidingWindowCounter/clock-forward-1h-and-back",
		Limits: []limit.Limit{lim(limit.SlidingWindowCounter, 3, m, 0)},
		Steps: []Step{
			{30 * s, 3, ok(0, 90*s)},
			{h + 30*s, 3, ok(0, 90*s)},
			{h + 30*s, 1, deny(0, 50*s, 90*s)},
			{40 * s, 1, deny(0, 40*s, 80*s)},
			{80 * s, 1, ok(0, 100*s)},
		},
	},
}
