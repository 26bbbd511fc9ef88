package algo

import "time"

// Decision is limit.Decision, field for field: package limit converts a
// *limit.Decision to a *Decision (the two have one underlying type, and
// package limit asserts it at compile time), so that the transitions write
// a caller's Decision in place without importing limit. See limit.Decision
// for the meaning of each field.
type Decision struct {
	Allowed    bool          // limit.Decision.Allowed
	Remaining  int64         // limit.Decision.Remaining
	RetryAfter time.Duration // limit.Decision.RetryAfter
	ResetAfter time.Duration // limit.Decision.ResetAfter
	Delay      time.Duration // limit.Decision.Delay
}

// us converts microseconds to a Duration.
func us(v int64) time.Duration { return time.Duration(v) * time.Microsecond }
