package httplimit

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/hybridlimit/hybridlimit/hybrid"
	"github.com/hybridlimit/hybridlimit/rules"
)

// setHeaders sets the rate-limit fields for a decided request. Every value
// comes from the durations in res, measured on the Redis server's clock;
// only the Unix form of X-RateLimit-Reset reads this machine's clock.
//
// hybrid reports the binding limit only, so RateLimit carries one item, the
// binding limit's, while RateLimit-Policy lists every limit of the rule.
// Its t is the effective window of draft-ietf-httpapi-ratelimit-headers-11
// (4.1.2), the seconds within which the client can use no more than r
// (see rules.CompiledRule.RateLimit); when denied, the time until the request would pass
// (the Retry-After value). X-RateLimit-Reset is the time until the binding
// limit is full again. Remaining is 0 when denied, and the dynamic fields
// are left out when no decision was made (SourceFailOpen).
func (m *Middleware) setHeaders(h http.Header, rl *rule, res hybrid.Result, d rules.Decision) {
	style := m.cfg.Headers
	if style == HeadersNone {
		return
	}
	if style.draft() {
		h.Set("RateLimit-Policy", rl.Policy)
	}
	field, ok := rl.RateLimit(res, d)
	if !ok {
		return
	}
	if style.draft() {
		h.Set("RateLimit", field)
	}
	if style.legacy() {
		remaining, reset := rl.Remaining(res, d)
		h.Set("X-RateLimit-Limit", strconv.FormatInt(rl.Limits[rl.Binding(res)].Rate, 10))
		h.Set("X-RateLimit-Remaining", strconv.FormatInt(remaining, 10))
		if m.cfg.ResetUnix {
			at := m.now().Add(reset)
			sec := at.Unix()
			if at.Nanosecond() > 0 {
				sec++
			}
			h.Set("X-RateLimit-Reset", strconv.FormatInt(sec, 10))
		} else {
			h.Set("X-RateLimit-Reset", strconv.FormatInt(rules.CeilSeconds(reset), 10))
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
func (m *Middleware) deny(w http.ResponseWriter, rl *rule, res hybrid.Result, d rules.Decision) {
	retry := strconv.FormatInt(d.RetrySeconds(), 10)
	body, err := json.Marshal(Problem{
		Type:             ProblemType,
		Title:            "Quota Exceeded",
		Status:           http.StatusTooManyRequests,
		Detail:           rl.Detail(d),
		ViolatedPolicies: []string{rl.BindingName(res)},
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
