package limit

import (
	"time"

	"github.com/hybridlimit/hybridlimit/internal/algo"
)

// Decision is the outcome of one request against one or more limits.
type Decision struct {
	// Allowed reports whether the request was admitted (and charged).
	Allowed bool
	// Remaining is how many more units the limit would admit right now,
	// after this request: 99 after the first request of 100/min.
	Remaining int64
	// RetryAfter is 0 when allowed; when denied, the time until the same
	// request would be admitted if nothing else were charged: 600ms for a
	// cost of 1 against an empty 100/min token bucket.
	RetryAfter time.Duration
	// ResetAfter is the time until the limit is back to its full capacity:
	// 600ms after one request of an otherwise full 100/min token bucket, the
	// end of the window for FixedWindow.
	ResetAfter time.Duration
	// Delay is, for an admitted LeakyBucket request, the time to wait before
	// acting on it so that the output never exceeds the rate; 0 otherwise.
	Delay time.Duration
}

// algoDecision is d as the transitions write it: the two types have one
// underlying type, which this conversion asserts at compile time.
func algoDecision(d *Decision) *algo.Decision { return (*algo.Decision)(d) }
