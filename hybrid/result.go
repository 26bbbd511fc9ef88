package hybrid

import (
	"strconv"
	"time"
)

// Source says what decided a request.
type Source uint8

const (
	// SourceRemote: the Redis node that owns the key, in one script call.
	SourceRemote Source = iota
	// SourceLease: units leased from Redis and spent in process.
	SourceLease
	// SourceDenyCache: a denial Redis gave recently, remembered until its
	// RetryAfter passes.
	SourceDenyCache
	// SourceFallback: in-process buckets enforcing Limit × FallbackShare,
	// because the key's node failed or its breaker is open.
	SourceFallback
	// SourceFailOpen: allowed without a decision, because the key's node
	// failed and the mode is FailOpen.
	SourceFailOpen
	// SourceFailClosed: denied without a decision, because the key's node
	// failed and the mode is FailClosed.
	SourceFailClosed

	numSources
)

var sourceNames = [...]string{"remote", "lease", "deny-cache", "fallback", "fail-open", "fail-closed"}

// Sources returns every Source, in order: for a metrics exporter that wants
// each series to exist from the start.
func Sources() []Source {
	out := make([]Source, numSources)
	for i := range out {
		out[i] = Source(i)
	}
	return out
}

// String returns a short lower-case name, for example "remote".
func (s Source) String() string {
	if s < numSources {
		return sourceNames[s]
	}
	return "Source(" + strconv.Itoa(int(s)) + ")"
}

// Result is the outcome of one request. It is returned by value.
type Result struct {
	// Allowed reports whether the request was admitted and charged.
	Allowed bool
	// Granted is the number of units taken: n for an admitted AllowN, the
	// count AllowAtMost took, 0 for a denial (and for Peek).
	Granted int64
	// Limit is the binding limit: when denied, the one that denied with the
	// longest RetryAfter; when allowed, the one with the fewest Remaining.
	Limit Limit
	// Binding is the index of Limit in the call's limits.
	Binding int
	// Remaining is how many more units the binding limit admits now: 99
	// after the first request of PerMinute(100). 0 when not known
	// (SourceFailOpen, SourceFailClosed).
	Remaining int64
	// RetryAfter is 0 when allowed; when denied, how long until the same
	// request would pass: 600ms after PerMinute(100) is used up.
	RetryAfter time.Duration
	// ResetAfter is how long until the binding limit is back to full
	// capacity: the end of the window for FixedWindow.
	ResetAfter time.Duration
	// Delay is, for an admitted LeakyBucket request, how long to hold it so
	// that the output never exceeds the rate; Wait sleeps it. 0 otherwise.
	Delay time.Duration
	// Source says what decided: SourceRemote for a decision made on Redis.
	Source Source
	// MaybeCharged is true when the failure mode answered a request that
	// was sent to the key's node and got no answer in its budget (a
	// timeout, a connection broken after the request was written, a
	// caller that left while a round trip carried it): Redis may have run
	// it and charged its units, whatever Allowed says. A user counting
	// what a key spent counts such a request as charged or not, both
	// possible. False for every other answer, and for Peek, which charges
	// nothing.
	MaybeCharged bool
}
