// Package limit is the shared vocabulary of hybridlimit and the reference
// semantics of its five algorithms.
//
// A [Limit] says how much is allowed (Rate units per Period) and how
// ([Algorithm]). Each algorithm is a pure transition
//
//	(State, Limit, now, cost) -> (State, Decision)
//
// ([Take], and [TakeAll] for several limits at once) computed in integers: a
// limit is reduced to an integer form (a time quantum, the period in quanta,
// the rate and the capacity; see [Limit.Validate]), and every product the
// transition forms stays below 2^53, so the Lua scripts of package remote,
// whose numbers are IEEE doubles, compute bit-for-bit the same decisions as
// this package. That form, and a [State]'s contents, are the module's own
// and not part of this API. Package local runs these transitions in
// process; package remote runs their Lua mirror on Redis, timed by the
// Redis server's clock. A conformance table checks all three against the
// same vectors.
//
// Semantics, for a limit of capacity C (Burst, or Rate when Burst is 0):
//
//   - TokenBucket: C tokens, refilled continuously at Rate/Period. Allowed
//     when at least cost tokens are present. RetryAfter is the time until
//     cost tokens will be present; ResetAfter the time until the bucket is
//     full again.
//   - LeakyBucket: a virtual queue of capacity C drained at Rate/Period
//     (shaping). An admitted request gets Delay, the time until the work
//     queued ahead of it has drained, so the output never exceeds the rate;
//     a request that does not fit in the queue is denied. ResetAfter is the
//     time until the queue is empty.
//   - FixedWindow: windows [k*Period, (k+1)*Period) of Unix time; allowed
//     while count+cost <= Rate. ResetAfter is the end of the window.
//   - SlidingWindowLog: exact; allowed while the events in (now-Period, now]
//     plus cost <= Rate. Each unit is one event.
//   - SlidingWindowCounter: estimate = previous*(1-elapsed/Period)+current,
//     compared exactly (never floored); allowed while estimate+cost <= Rate.
//
// A denied request consumes nothing (a state ahead of a clock stepped back
// may be rebased; see below). A cost larger than a limit's capacity is
// an error ([ErrCostExceedsLimit]), not a denial. Several limits applied to
// one request ([TakeAll]) are all-or-nothing: a denial by any of them consumes
// nothing from the others.
//
// # Clocks that step
//
// A store's clock may step either way: NTP steps a server's wall clock, and
// a failover to a replica changes it. Every duration a Decision reports
// counts from now, the instant of the request, also when the state lies
// ahead of it, and RetryAfter is truthful: the same request made RetryAfter
// later, with nothing else charged, is admitted.
//
// A state lies in the future of now only when the clock went back. A state
// less than a period ahead (a bucket: one whose deficit, read back, is
// within its capacity) follows the house rule: time that goes backwards
// counts as no time passed. A window's count stays in the window of its
// last charge and the log's events keep their times, so jitter across a
// window's boundary grants no second burst; a bucket, whose state is "the
// time at which it is full" (one integer, which is what lets Redis store a
// bucket in the minimum it can), reads as it was that much earlier, never
// emptier than empty.
//
// A state further ahead cannot be explained by a clock going forward, and
// is rebased to now: a bucket is empty as of now; FixedWindow's count
// belongs to now's window; SlidingWindowCounter's current and previous
// counts are now's window's and the one before; SlidingWindowLog's events
// after now become events at now, and leave a period after now. Nothing is
// charged, but the state changes even on a denial: Take returns the rebased
// state and a store must keep it, or the key would be rebased at every
// request and stay denied until the clock caught up.
//
// So after a step of up to an hour either way, no request is denied past
// one bound after the first request since the step or the last charge
// since: a fresh key's longest wait (a bucket's fill time; a period, two
// for SlidingWindowCounter) plus one period (for a bucket, plus nothing).
// A step forward counts as time passed: it grants at most one capacity
// beyond what the limit admits over real time. A step back grants nothing
// beyond that, except where a bucket's Redis form wraps: it is one integer
// modulo 2^52, and a step back of d with Rate × d (in quanta) near 2^51 or
// more (an hour at a 1µs quantum: about 625,000 units per period) leaves
// the bucket reading anything from empty to full until it is next charged:
// one capacity at most, and a wait of one fill time at most. Package limit
// reads a bucket the same way, so that the Redis scripts and this package
// agree exactly. See DESIGN-NOTES.md.
//
// # Limits that change
//
// A store keys an unnamed limit's state by the limit: a limit with another
// rate, period or burst is another limit, whose state starts as the zero
// State (a full budget). A named limit's state is keyed by its Name and
// algorithm, and kept with the integer form of the limit it was written
// for; a request whose limit of that name has another rate, period or burst
// converts it first: the units in use at now, the old capacity minus what
// the old limit admits (rounded up to whole units), are charged afresh to
// the new limit at now,
// at most its capacity. So a change never grants more than the new
// capacity, and a lowered limit denies a client that used more than it
// for at most one fill time (a bucket) or one period (two for
// SlidingWindowCounter). Conversion keeps counts, not times: units that
// would have left a window soon are charged at now and leave a period
// later, and a bucket's fraction of a token is lost. While instances
// disagree on a limit (a rolling reload), each conversion keeps the units
// in use, capped by the capacity it converts to: a key used beyond the
// lower capacity loses the excess once, so it is admitted at most the
// higher capacity minus the lower more per flip. Units of a lease taken
// under the old limit are not given back to the converted state.
//
// The stores' leases (a batch of units taken at once, whose unused part is
// given back) follow the same rules: a lease given back after its state
// was rebased finds its window, or its events, moved to now, and returns
// nothing unless its own time lies in now's window, as
// it does for a lease taken before a step forward and given back after the
// step's correction: its units then go to the count that the rebase moved
// there, so the limit is exceeded by at most the units leased across both
// steps.
package limit
