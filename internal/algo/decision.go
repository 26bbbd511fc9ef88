package algo

import "time"

// Decision is limit.Decision, field for field: package limit converts a
// *limit.Decision to a *Decision (the two have one underlying type, and
// package limit asserts it at compile time), so that the transitions write
// a caller's Decision in place without importing limit. See limit.Decision
// for the meaning of each field.
type Decision struct {
	Allowed    bool
	Remaining  int64
	RetryAfter time.Duration
	ResetAfter time.Duration
	Delay      time.Duration
}

// us converts microseconds to a Duration.
func us(v int64) time.Duration { return time.Duration(v) * time.Microsecond }
