package httplimit

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/hybridlimit/hybridlimit/hybrid"
)

// ceilSeconds rounds d up to whole seconds; 0 for d <= 0.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// binding returns the index of the rule's limit that bound res: the
// rule's limits are the call's, in order.
func (rl *rule) binding(res hybrid.Result) int {
	if res.Binding < 0 || res.Binding >= len(rl.Limits) {
		return 0
	}
	return res.Binding
}

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

// setHeaders sets the rate-limit fields for a decided request. Every value
// comes from the durations in res, measured on the Redis server's clock;
// only the Unix form of X-RateLimit-Reset reads this machine's clock.
//
// hybrid reports the binding limit only, so RateLimit carries one item, the
// binding limit's, while RateLimit-Policy lists every limit of the rule.
// Its t is the effective window of draft-ietf-httpapi-ratelimit-headers-11
// (4.1.2), the seconds within which the client can use no more than r
// (effectiveWindow); when denied, the time until the request would pass
// (the Retry-After value). X-RateLimit-Reset is the time until the binding
// limit is full again. Remaining is 0 when denied, and the dynamic fields
// are left out when no decision was made (SourceFailOpen).
func (m *Middleware) setHeaders(h http.Header, rl *rule, res hybrid.Result, d decision) {
	style := m.cfg.Headers
	if style == HeadersNone {
		return
	}
	b := rl.binding(res)
	if style.draft() {
		h.Set("RateLimit-Policy", rl.policy)
	}
	if res.Source == hybrid.SourceFailOpen {
		return
	}
	remaining := max(res.Remaining, 0)
	t := ceilSeconds(effectiveWindow(rl.Limits[b], res))
	reset := res.ResetAfter
	if !d.allowed {
		remaining = 0
		t = max(ceilSeconds(d.retry), 1)
		reset = max(reset, d.retry)
	}
	if style.draft() {
		v := make([]byte, 0, 64)
		v = strconv.AppendQuote(v, rl.names[b])
		v = append(v, ";r="...)
		v = strconv.AppendInt(v, remaining, 10)
		v = append(v, ";t="...)
		v = strconv.AppendInt(v, t, 10)
		h.Set("RateLimit", string(v))
	}
	if style.legacy() {
		h.Set("X-RateLimit-Limit", strconv.FormatInt(rl.Limits[b].Rate, 10))
		h.Set("X-RateLimit-Remaining", strconv.FormatInt(remaining, 10))
		if m.cfg.ResetUnix {
			at := m.now().Add(reset)
			sec := at.Unix()
			if at.Nanosecond() > 0 {
				sec++
			}
			h.Set("X-RateLimit-Reset", strconv.FormatInt(sec, 10))
		} else {
			h.Set("X-RateLimit-Reset", strconv.FormatInt(ceilSeconds(reset), 10))
		}
	}
}

// ProblemType is the type of the 429 body: the "quota-exceeded" problem
// type of draft-ietf-httpapi-ratelimit-headers.
const ProblemType = "https://iana.org/assignments/http-problem-types#quota-exceeded"

// Problem is the RFC 9457 body of a 429 response, sent as
// application/problem+json:
//
//	{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded",
//	 "title":"Quota Exceeded","status":429,
//	 "detail":"Too many requests under rule \"search\"; retry in 3 seconds.",
//	 "violated-policies":["search"]}
type Problem struct {
	// Type is ProblemType.
	Type string `json:"type"`
	// Title is "Quota Exceeded", the problem type's title.
	Title string `json:"title"`
	// Status is 429.
	Status int `json:"status"`
	// Detail names the rule and the seconds to wait, as Retry-After says.
	Detail string `json:"detail"`
	// ViolatedPolicies names the binding limit's policy, as the RateLimit
	// field does: "search", or "search-1" for a rule's second limit.
	ViolatedPolicies []string `json:"violated-policies"`
}

// deny writes the 429 response.
func (m *Middleware) deny(w http.ResponseWriter, rl *rule, res hybrid.Result, d decision) {
	secs := max(ceilSeconds(d.retry), 1)
	retry := strconv.FormatInt(secs, 10)
	unit := " seconds."
	if secs == 1 {
		unit = " second."
	}
	body, err := json.Marshal(Problem{
		Type:             ProblemType,
		Title:            "Quota Exceeded",
		Status:           http.StatusTooManyRequests,
		Detail:           "Too many requests under rule " + strconv.Quote(rl.Name) + "; retry in " + retry + unit,
		ViolatedPolicies: []string{rl.names[rl.binding(res)]},
	})
	if err != nil {
		body = nil // unreachable: every field is a plain value
	}
	body = append(body, '\n')
	h := w.Header()
	h.Set("Retry-After", retry)
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusTooManyRequests)
	w.Write(body) //nolint:errcheck // the client may be gone; nothing to do
}
