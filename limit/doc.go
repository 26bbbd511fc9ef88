// Package limit is the shared vocabulary of hybridlimit and the reference
// semantics of its five algorithms.
//
// A [Limit] says how much is allowed (Rate units per Period) and how
// ([Algorithm]). Each algorithm is a pure transition
//
//	(State, Limit, now, cost) -> (State, Decision)
//
// computed in integers: a limit is first reduced to its [Spec] (time quantum,
// period in quanta, rate, capacity), and every product the transition forms
// stays below 2^53, so the Lua scripts of package remote, whose numbers are
// IEEE doubles, compute bit-for-bit the same decisions as this package. Package
// local runs these transitions in process; package remote runs their Lua
// mirror on Redis, timed by the Redis server's clock. A conformance table
// checks all three against the same vectors.
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
// A denied request consumes nothing. A cost larger than a limit's capacity is
// an error ([ErrCostExceedsLimit]), not a denial. Several limits applied to
// one request ([TakeAll]) are all-or-nothing: a denial by any of them consumes
// nothing from the others.
//
// Time that goes backwards counts as no time passed for the window
// algorithms. The two buckets keep their state as "the time at which the
// bucket is full" (one integer, which is what lets Redis store a bucket in
// the minimum it can); a clock stepped back by d finds such a bucket as it was
// d earlier, never emptier than empty. See DESIGN-NOTES.md.
package limit
