package rules

import (
	"strconv"
	"strings"
	"time"

	"github.com/hybridlimit/hybridlimit/hybrid"
)

// Decision is a middleware's answer to a request.
type Decision struct {
	// Allowed reports whether the request may go on (after the Limiter's
	// Delay, which the Engine holds).
	Allowed bool
	// Retry is, when denied, how long until the request would pass: the
	// Limiter's RetryAfter; for a Delay above MaxDelay, the excess: the
	// request's place in the queue is given back (Limiter.Refund).
	Retry time.Duration
}

// Decide turns the Limiter's answer into the rule's: a LeakyBucket Delay
// above MaxDelay is a denial.
func (rl *CompiledRule) Decide(res hybrid.Result) Decision {
	switch {
	case !res.Allowed:
		return Decision{Retry: res.RetryAfter}
	case res.Delay > rl.MaxDelay:
		return Decision{Retry: res.Delay - rl.MaxDelay}
	}
	return Decision{Allowed: true}
}

// RetrySeconds is a denial's Retry in whole seconds, rounded up, never 0:
// HTTP's Retry-After and the denied RateLimit's t, which are whole seconds.
func (d Decision) RetrySeconds() int64 { return max(CeilSeconds(d.Retry), 1) }

// RetryMillis is a denial's Retry in milliseconds, rounded up, never 0:
// gRPC's RetryInfo and grpc-retry-pushback-ms, which carry the time until
// the call would pass, not HTTP's whole seconds (1 for a Retry of 300µs on
// a limit of 1000/s, where RetrySeconds says 1000 times as long).
func (d Decision) RetryMillis() int64 { return max(ceilMillis(d.Retry), 1) }

// ceilMillis rounds d up to whole milliseconds; 0 for d <= 0.
func ceilMillis(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d-1)/time.Millisecond) + 1
}

// CeilSeconds rounds d up to whole seconds; 0 for d <= 0.
func CeilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// Binding returns the index of the rule's limit that bound res: the rule's
// limits are the call's, in order.
func (rl *CompiledRule) Binding(res hybrid.Result) int {
	if res.Binding < 0 || res.Binding >= len(rl.Limits) {
		return 0
	}
	return res.Binding
}

// BindingName is the policy name of the limit that bound res, as the
// RateLimit field and a denial name it.
func (rl *CompiledRule) BindingName(res hybrid.Result) string { return rl.Names[rl.Binding(res)] }

// effectiveWindow is, for an admitted request, the time within which the
// client can use no more than the remaining quota: until the window ends
// for a FixedWindow, whose quota grows only then; for the others, one
// unit's share of the period, the time in which their quota grows by
// about one unit (a bucket refills at that pace; a sliding window's events
// leave it at that pace on average). Never below a second: t is whole
// seconds, and 0 would tell a client with budget that it has no time to
// use it.
func effectiveWindow(l hybrid.Limit, res hybrid.Result) time.Duration {
	if l.Algorithm == hybrid.FixedWindow {
		return max(res.ResetAfter, time.Second)
	}
	return max(l.Period/time.Duration(l.Rate), time.Second)
}

// Remaining returns the binding limit's remaining units and the time until
// it is full again, as a response reports them: Remaining is 0 when
// denied, and the reset is at least the denial's Retry.
func (rl *CompiledRule) Remaining(res hybrid.Result, d Decision) (remaining int64, reset time.Duration) {
	if !d.Allowed {
		return 0, max(res.ResetAfter, d.Retry)
	}
	return max(res.Remaining, 0), res.ResetAfter
}

// RateLimit returns the value of the RateLimit field of
// draft-ietf-httpapi-ratelimit-headers for a decided request, and false
// when no decision was made (SourceFailOpen): then only the policy is
// sent. Every value comes from the durations in res, measured on the Redis
// server's clock.
//
// hybrid reports the binding limit only, so the field carries one item,
// the binding limit's, while RateLimit-Policy lists every limit of the
// rule. Its t is the effective window of draft-11 (4.1.2), the seconds
// within which the client can use no more than r (effectiveWindow); when
// denied, the time until the request would pass (RetrySeconds).
func (rl *CompiledRule) RateLimit(res hybrid.Result, d Decision) (string, bool) {
	if res.Source == hybrid.SourceFailOpen {
		return "", false
	}
	b := rl.Binding(res)
	remaining, _ := rl.Remaining(res, d)
	t := CeilSeconds(effectiveWindow(rl.Limits[b], res))
	if !d.Allowed {
		t = d.RetrySeconds()
	}
	v := make([]byte, 0, 64)
	v = strconv.AppendQuote(v, rl.Names[b])
	v = append(v, ";r="...)
	v = strconv.AppendInt(v, remaining, 10)
	v = append(v, ";t="...)
	v = strconv.AppendInt(v, t, 10)
	return string(v), true
}

// Detail is the sentence an HTTP denial carries, its retry in the whole
// seconds of Retry-After: `Too many requests under rule "search"; retry
// in 3 seconds.`
func (rl *CompiledRule) Detail(d Decision) string {
	secs := d.RetrySeconds()
	unit := " seconds."
	if secs == 1 {
		unit = " second."
	}
	return "Too many requests under rule " + strconv.Quote(rl.Name) + "; retry in " + strconv.FormatInt(secs, 10) + unit
}

// DetailMillis is the sentence a gRPC denial carries, its retry in the
// milliseconds of RetryInfo, written by FormatMillis: `Too many requests
// under rule "search"; retry in 2ms.`, `...; retry in 1.5s.`
func (rl *CompiledRule) DetailMillis(d Decision) string {
	return "Too many requests under rule " + strconv.Quote(rl.Name) + "; retry in " + FormatMillis(d.RetryMillis()) + "."
}

// FormatMillis writes ms milliseconds in the unit that reads naturally:
// milliseconds below a second ("1ms", "999ms"), else seconds with up to
// three decimals, trailing zeros trimmed ("1s", "1.5s", "12.345s",
// "1800s"). Unlike time.Duration's String it never mixes units.
func FormatMillis(ms int64) string {
	if ms < 1000 {
		return strconv.FormatInt(ms, 10) + "ms"
	}
	s := strconv.FormatInt(ms/1000, 10)
	if frac := ms % 1000; frac != 0 {
		f := strconv.FormatInt(1000+frac, 10)[1:] // three digits, leading zeros kept
		s += "." + strings.TrimRight(f, "0")
	}
	return s + "s"
}
