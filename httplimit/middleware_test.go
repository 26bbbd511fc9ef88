package httplimit

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hybridlimit/hybridlimit/hybrid"
	"github.com/hybridlimit/hybridlimit/rules"
)

// t0 pins the Redis clock: 10 s into a minute, so window figures are round.
var t0 = time.Date(2030, 1, 2, 3, 4, 10, 0, time.UTC)

func TestNewErrors(t *testing.T) {
	lim, _ := newMini(t)
	tests := []struct {
		name string
		lim  *hybrid.Limiter
		cfg  Config
		want error
	}{
		{"nil limiter", nil, Config{}, ErrInvalidConfig},
		{"bad trusted proxy", lim, Config{TrustedProxies: []string{"10.0.0.0/40"}}, ErrInvalidConfig},
		{"trust everyone", lim, Config{TrustedProxies: []string{"0.0.0.0/0"}}, ErrInvalidConfig},
		{"IPv6 prefix too long", lim, Config{IPv6Prefix: 129}, ErrInvalidConfig},
		{"negative IPv4 prefix", lim, Config{IPv4Prefix: -1}, ErrInvalidConfig},
		{"unknown headers", lim, Config{Headers: 9}, ErrInvalidConfig},
		{"long prefix", lim, Config{Prefix: strings.Repeat("p", 65)}, ErrInvalidConfig},
		{"bad rules", lim, Config{Rules: RuleSet{Default: &Rule{}}}, ErrInvalidRules},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.lim, tt.cfg); !errors.Is(err, tt.want) {
				t.Fatalf("New = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestDraftHeadersAnd429(t *testing.T) {
	lim, m := newMini(t)
	m.SetTime(t0)
	mw := newMiddleware(t, lim, Config{Rules: RuleSet{Rules: []Rule{{Name: "api", Route: "/api/", Limits: []hybrid.Limit{hybrid.PerMinute(3)}}}}})
	h := mw.Wrap(ok)
	// 3 per minute refill one every 20 s: within 20 s the client can use
	// no more than r (draft-11's effective window), whatever r is.
	for i, want := range []string{`"api";r=2;t=20`, `"api";r=1;t=20`, `"api";r=0;t=20`} {
		w := do(h, "GET", "/api/x")
		if w.Code != 200 || w.Body.String() != "ok" {
			t.Fatalf("request %d = %d %q, want 200 ok", i+1, w.Code, w.Body)
		}
		if got := w.Header().Get("RateLimit"); got != want {
			t.Errorf("request %d: RateLimit = %q, want %q", i+1, got, want)
		}
		if got := w.Header().Get("RateLimit-Policy"); got != `"api";q=3;w=60` {
			t.Errorf("request %d: RateLimit-Policy = %q", i+1, got)
		}
		if got := w.Header().Get("Retry-After"); got != "" {
			t.Errorf("request %d: Retry-After = %q on a 200", i+1, got)
		}
	}
	w := do(h, "GET", "/api/x")
	if w.Code != http.StatusTooManyRequests {
		t.Fatalf("request 4 = %d, want 429", w.Code)
	}
	wantHeaders := map[string]string{
		"Retry-After":      "20",
		"RateLimit":        `"api";r=0;t=20`,
		"RateLimit-Policy": `"api";q=3;w=60`,
		"Content-Type":     "application/problem+json",
	}
	for k, v := range wantHeaders {
		if got := w.Header().Get(k); got != v {
			t.Errorf("429 %s = %q, want %q", k, got, v)
		}
	}
	var p Problem
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
		t.Fatalf("429 body %q: %v", w.Body, err)
	}
	want := Problem{Type: ProblemType, Title: "Quota Exceeded", Status: 429,
		Detail: `Too many requests under rule "api"; retry in 20 seconds.`, ViolatedPolicies: []string{"api"}}
	if p.Type != want.Type || p.Title != want.Title || p.Status != want.Status || p.Detail != want.Detail || strings.Join(p.ViolatedPolicies, ",") != "api" {
		t.Errorf("429 body = %+v, want %+v", p, want)
	}
	if got := w.Header().Get("Content-Length"); got != "" && got != itoa64(int64(w.Body.Len())) {
		t.Errorf("Content-Length = %s for %d bytes", got, w.Body.Len())
	}
	// A route without a rule passes without headers.
	w = do(h, "GET", "/free")
	if w.Code != 200 || w.Header().Get("RateLimit") != "" || w.Header().Get("RateLimit-Policy") != "" {
		t.Errorf("unmatched request = %d %v, want 200 without rate-limit headers", w.Code, w.Header())
	}
	st := mw.Stats()
	if len(st.Rules) != 1 || st.Rules[0].Allowed != 3 || st.Rules[0].Denied != 1 {
		t.Errorf("Stats = %+v, want 3 allowed, 1 denied", st)
	}
}

func TestHeaderStyles(t *testing.T) {
	two := []hybrid.Limit{hybrid.PerMinute(10), hybrid.PerHour(3)}
	tests := []struct {
		name   string
		cfg    Config
		limits []hybrid.Limit
		n      int               // requests before the one checked
		want   map[string]string // "" for absent
	}{
		{"draft", Config{}, []hybrid.Limit{hybrid.PerMinute(3)}, 0, map[string]string{
			"RateLimit-Policy": `"r";q=3;w=60`, "RateLimit": `"r";r=2;t=20`,
			"X-RateLimit-Limit": "", "X-RateLimit-Remaining": "", "X-RateLimit-Reset": ""}},
		{"legacy", Config{Headers: HeadersLegacy}, []hybrid.Limit{hybrid.PerMinute(3)}, 0, map[string]string{
			"RateLimit-Policy": "", "RateLimit": "",
			"X-RateLimit-Limit": "3", "X-RateLimit-Remaining": "2", "X-RateLimit-Reset": "20"}},
		{"legacy unix", Config{Headers: HeadersLegacy, ResetUnix: true}, []hybrid.Limit{hybrid.PerMinute(3)}, 0, map[string]string{
			"X-RateLimit-Reset": itoa64(t0.Unix() + 1000 + 20)}},
		{"both", Config{Headers: HeadersBoth}, []hybrid.Limit{hybrid.PerMinute(3)}, 0, map[string]string{
			"RateLimit": `"r";r=2;t=20`, "X-RateLimit-Remaining": "2"}},
		{"none", Config{Headers: HeadersNone}, []hybrid.Limit{hybrid.PerMinute(3)}, 0, map[string]string{
			"RateLimit-Policy": "", "RateLimit": "", "X-RateLimit-Limit": ""}},
		{"none still sends Retry-After", Config{Headers: HeadersNone}, []hybrid.Limit{hybrid.PerMinute(3)}, 3, map[string]string{
			"RateLimit": "", "Retry-After": "20"}},
		{"several limits: the binding one", Config{Headers: HeadersBoth}, two, 0, map[string]string{
			"RateLimit-Policy": `"r-0";q=10;w=60, "r-1";q=3;w=3600`, "RateLimit": `"r-1";r=2;t=1200`,
			"X-RateLimit-Limit": "3", "X-RateLimit-Remaining": "2", "X-RateLimit-Reset": "1200"}},
		{"legacy reset when denied", Config{Headers: HeadersLegacy}, []hybrid.Limit{hybrid.PerMinute(3)}, 3, map[string]string{
			"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "60", "Retry-After": "20"}},
		{"fixed window", Config{}, []hybrid.Limit{{Algorithm: hybrid.FixedWindow, Rate: 2, Period: time.Minute}}, 2, map[string]string{
			"RateLimit": `"r";r=0;t=50`, "Retry-After": "50"}},
		{"sub-second retry rounds up to 1", Config{}, []hybrid.Limit{hybrid.PerSecond(10)}, 10, map[string]string{
			"RateLimit": `"r";r=0;t=1`, "Retry-After": "1"}},
		{"retry of 1.2s rounds up to 2", Config{}, []hybrid.Limit{{Rate: 5, Period: 6 * time.Second}}, 5, map[string]string{
			"RateLimit": `"r";r=0;t=2`, "Retry-After": "2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lim, m := newMini(t)
			m.SetTime(t0)
			tt.cfg.Rules = RuleSet{Default: &Rule{Name: "r", Limits: tt.limits}}
			mw := newMiddleware(t, lim, tt.cfg)
			mw.now = func() time.Time { return t0.Add(1000 * time.Second) } // this machine's clock, off from Redis's
			h := mw.Wrap(ok)
			for range tt.n {
				do(h, "GET", "/")
			}
			w := do(h, "GET", "/")
			for k, v := range tt.want {
				if got := w.Header().Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

func TestFailOpenOmitsDynamicHeaders(t *testing.T) {
	lim, err := hybrid.New(hybrid.Config{Addrs: []string{"127.0.0.1:1"}, OnFailure: hybrid.FailOpen, Timeout: 200 * time.Millisecond, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer lim.Close()
	mw := newMiddleware(t, lim, Config{Headers: HeadersBoth, Rules: RuleSet{Default: &Rule{Limits: perMin}}})
	w := do(mw.Wrap(ok), "GET", "/")
	if w.Code != 200 {
		t.Fatalf("status = %d, want 200", w.Code)
	}
	if w.Header().Get("RateLimit-Policy") == "" || w.Header().Get("RateLimit") != "" || w.Header().Get("X-RateLimit-Remaining") != "" {
		t.Errorf("headers = %v, want the policy only", w.Header())
	}
}

func TestShadowRule(t *testing.T) {
	lim, _ := newMini(t)
	var log logBuffer
	mw := newMiddleware(t, lim, Config{Logger: log.logger(), Rules: RuleSet{
		Rules: []Rule{{Name: "trial", Route: "/v2/", Shadow: true, Limits: []hybrid.Limit{hybrid.PerMinute(2)}}},
	}})
	mw.now = func() time.Time { return t0 } // the log sampler's clock
	h := mw.Wrap(ok)
	for i := range 5 {
		w := do(h, "GET", "/v2/x")
		if w.Code != 200 || w.Body.String() != "ok" {
			t.Fatalf("request %d = %d, want 200: a shadow rule never blocks", i+1, w.Code)
		}
		for _, k := range []string{"RateLimit", "RateLimit-Policy", "Retry-After", "X-RateLimit-Limit"} {
			if v := w.Header().Get(k); v != "" {
				t.Errorf("request %d: %s = %q from a shadow rule", i+1, k, v)
			}
		}
	}
	st := mw.Stats().Rules[0]
	if st.Allowed != 2 || st.ShadowDenied != 3 || st.Denied != 0 || !st.Shadow {
		t.Errorf("Stats = %+v, want 2 allowed, 3 shadow-denied", st)
	}
	// Log lines are sampled: one per rule per second.
	if n := strings.Count(log.String(), "shadow rule would deny"); n != 1 {
		t.Errorf("log has %d shadow lines, want 1:\n%s", n, log.String())
	}
	if !strings.Contains(log.String(), "rule=trial") {
		t.Errorf("log does not name the rule:\n%s", log.String())
	}
	// The budget was charged: the rule, once enforced, denies at once.
	if err := mw.SetRules(RuleSet{Rules: []Rule{{Name: "trial", Route: "/v2/", Limits: []hybrid.Limit{hybrid.PerMinute(2)}}}}); err != nil {
		t.Fatal(err)
	}
	if w := do(h, "GET", "/v2/x"); w.Code != 429 {
		t.Errorf("after enforcing: %d, want 429", w.Code)
	}
}

func TestLeakyBucketDelay(t *testing.T) {
	lim, m := newMini(t)
	m.SetTime(t0)
	// One every 50ms, a queue of 4: the nth request waits (n-1)×50ms; the
	// 4th would wait 150ms, above the 120ms allowed.
	leaky := hybrid.Limit{Algorithm: hybrid.LeakyBucket, Rate: 20, Period: time.Second, Burst: 4}
	var log logBuffer
	mw := newMiddleware(t, lim, Config{Logger: log.logger(), Rules: RuleSet{Default: &Rule{Limits: []hybrid.Limit{leaky}, MaxDelay: 120 * time.Millisecond}}})
	if !strings.Contains(log.String(), "lower the burst to 3") {
		t.Errorf("no warning about the queue outlasting MaxDelay:\n%s", log.String())
	}
	h := mw.Wrap(ok)
	wantWait := []time.Duration{0, 50 * time.Millisecond, 100 * time.Millisecond}
	for i, wait := range wantWait {
		start := time.Now()
		w := do(h, "GET", "/")
		if w.Code != 200 {
			t.Fatalf("request %d = %d, want 200 after %v", i+1, w.Code, wait)
		}
		if took := time.Since(start); took < wait {
			t.Errorf("request %d took %v, want a delay of at least %v", i+1, took, wait)
		}
	}
	w := do(h, "GET", "/") // delay 150ms > 120ms: denied, 30ms early
	if w.Code != 429 || w.Header().Get("Retry-After") != "1" {
		t.Errorf("request 4 = %d, Retry-After %q; want 429 with 1", w.Code, w.Header().Get("Retry-After"))
	}
	w = do(h, "GET", "/") // the queue is full
	if w.Code != 429 {
		t.Errorf("request 5 = %d, want 429", w.Code)
	}
	st := mw.Stats().Rules[0]
	if st.Allowed != 1 || st.Delayed != 2 || st.Denied != 2 {
		t.Errorf("Stats = %+v, want 1 allowed, 2 delayed, 2 denied", st)
	}
}

func TestRulesDoNotShareBudgets(t *testing.T) {
	lim, _ := newMini(t)
	l := []hybrid.Limit{hybrid.PerMinute(1)}
	mw := newMiddleware(t, lim, Config{Rules: RuleSet{
		Rules:   []Rule{{Name: "a", Route: "/a", Limits: l}, {Name: "b", Route: "/b", Limits: l}},
		Default: &Rule{Limits: l},
	}})
	h := mw.Wrap(ok)
	for _, path := range []string{"/a", "/b", "/c"} {
		if w := do(h, "GET", path); w.Code != 200 {
			t.Errorf("first GET %s = %d, want 200", path, w.Code)
		}
	}
	for _, path := range []string{"/a", "/b", "/c"} {
		if w := do(h, "GET", path); w.Code != 429 {
			t.Errorf("second GET %s = %d, want 429", path, w.Code)
		}
	}
	// Another client has budgets of its own.
	if w := do(h, "GET", "/a", "RemoteAddr", "198.51.100.2:1"); w.Code != 200 {
		t.Errorf("GET /a from another client = %d, want 200", w.Code)
	}
}

func TestKeySourcesEndToEnd(t *testing.T) {
	lim, _ := newMini(t)
	mw := newMiddleware(t, lim, Config{
		User: func(r *http.Request) (string, bool) {
			c, err := r.Cookie("session")
			return strings.TrimPrefix(c.String(), "session="), err == nil
		},
		TrustedProxies: []string{"10.0.0.0/8"},
		Rules:          RuleSet{Default: &Rule{Limits: []hybrid.Limit{hybrid.PerMinute(1)}}},
	})
	h := mw.Wrap(ok)
	tests := []struct {
		name   string
		header []string
		want   int
	}{
		{"api key", []string{"X-API-Key", "k1"}, 200},
		{"same api key from elsewhere", []string{"X-API-Key", "k1", "RemoteAddr", "198.51.100.9:1"}, 429},
		{"other api key", []string{"X-API-Key", "k2"}, 200},
		{"user", []string{"Cookie", "session=alice"}, 200},
		{"same user from elsewhere", []string{"Cookie", "session=alice", "RemoteAddr", "198.51.100.9:1"}, 429},
		{"ip", nil, 200},
		{"same ip", nil, 429},
		{"spoofed XFF from an untrusted peer", []string{"X-Forwarded-For", "203.0.113.50"}, 429},
		{"client behind a trusted proxy", []string{"RemoteAddr", "10.0.0.1:1", "X-Forwarded-For", "203.0.113.50"}, 200},
		{"same client behind another proxy", []string{"RemoteAddr", "10.0.0.2:1", "X-Forwarded-For", "203.0.113.50"}, 429},
		{"spoofed leftmost entry", []string{"RemoteAddr", "10.0.0.1:1", "X-Forwarded-For", "1.2.3.4, 203.0.113.50"}, 429},
		{"IPv6 client", []string{"RemoteAddr", "[2001:db8:1:2::1]:1"}, 200},
		{"same IPv6 /64", []string{"RemoteAddr", "[2001:db8:1:2::ffff]:1"}, 429},
		{"IPv4-mapped form of a used IPv4", []string{"RemoteAddr", "[::ffff:198.51.100.1]:1"}, 429},
	}
	for _, tt := range tests {
		if w := do(h, "GET", "/", tt.header...); w.Code != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, w.Code, tt.want)
		}
	}
}

func TestLimiterClosedPasses(t *testing.T) {
	lim, _ := newMini(t)
	var log logBuffer
	mw := newMiddleware(t, lim, Config{Logger: log.logger(), Rules: RuleSet{Default: &Rule{Limits: perMin}}})
	lim.Close()
	for range 3 {
		if w := do(mw.Wrap(ok), "GET", "/"); w.Code != 200 {
			t.Fatalf("status = %d, want 200 after the Limiter's Close", w.Code)
		}
	}
	if st := mw.Stats().Rules[0]; st.Errors != 3 {
		t.Errorf("Errors = %d, want 3", st.Errors)
	}
	if !strings.Contains(log.String(), "limiter failed") {
		t.Errorf("log = %q, want the failure", log.String())
	}
}

func TestClientGoneDuringDelay(t *testing.T) {
	lim, m := newMini(t)
	m.SetTime(t0)
	leaky := hybrid.Limit{Algorithm: hybrid.LeakyBucket, Rate: 1, Period: time.Minute, Burst: 2}
	mw := newMiddleware(t, lim, Config{Rules: RuleSet{Default: &Rule{Limits: []hybrid.Limit{leaky}, MaxDelay: time.Hour}}})
	served := false
	h := mw.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served = true }))
	do(h, "GET", "/")
	served = false
	ctx, cancel := context.WithCancel(context.Background())
	r := httptest.NewRequestWithContext(ctx, "GET", "/", nil)
	r.RemoteAddr = "198.51.100.1:5000"
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	h.ServeHTTP(httptest.NewRecorder(), r) // would wait a minute
	if served || time.Since(start) > 30*time.Second {
		t.Errorf("served = %v after %v, want the request dropped when its client left", served, time.Since(start))
	}
}

// TestLeakyRefusalGivesItsPlaceBack: a LeakyBucket request held longer
// than MaxDelay is refused, and the place it took in the queue goes back
// (Limiter.Refund), as does that of a request whose client left while
// held: the queue is as before either way.
func TestLeakyRefusalGivesItsPlaceBack(t *testing.T) {
	lim, m := newMini(t)
	m.SetTime(t0)
	leaky := hybrid.Limit{Algorithm: hybrid.LeakyBucket, Rate: 1, Period: time.Minute, Burst: 5}
	mw := newMiddleware(t, lim, Config{Rules: RuleSet{Default: &Rule{Limits: []hybrid.Limit{leaky}, MaxDelay: time.Second}}})
	h := mw.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	ctx := context.Background()
	kr := httptest.NewRequest("GET", "/", nil)
	kr.RemoteAddr = "198.51.100.1:5000" // do's
	def := mw.eng.Rules().Default
	key := mw.key(kr, def)
	peek := func() int64 {
		t.Helper()
		r, err := lim.Peek(ctx, key, def.Limits...) // the rule's, named
		if err != nil {
			t.Fatal(err)
		}
		return r.Remaining
	}
	if w := do(h, "GET", "/"); w.Code != http.StatusOK {
		t.Fatalf("first request: %d", w.Code)
	}
	before := peek()
	w := do(h, "GET", "/") // would be held a minute
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "59" {
		t.Fatalf("second request: %d, Retry-After %q; want 429 after 59 s", w.Code, w.Header().Get("Retry-After"))
	}
	if after := peek(); after != before {
		t.Errorf("queue after a refused request: remaining %d, want %d (its place given back)", after, before)
	}
	mw2 := newMiddleware(t, lim, Config{Rules: RuleSet{Default: &Rule{Limits: []hybrid.Limit{leaky}, MaxDelay: time.Hour}}})
	h2 := mw2.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Error("served") }))
	cctx, cancel := context.WithCancel(ctx)
	r := httptest.NewRequestWithContext(cctx, "GET", "/", nil)
	r.RemoteAddr = kr.RemoteAddr
	time.AfterFunc(20*time.Millisecond, cancel)
	h2.ServeHTTP(httptest.NewRecorder(), r)
	if after := peek(); after != before {
		t.Errorf("queue after a client left while held: remaining %d, want %d", after, before)
	}
}

func TestDecide(t *testing.T) {
	leaky := hybrid.Limit{Algorithm: hybrid.LeakyBucket, Rate: 20, Period: time.Second, Burst: 10}
	s, _, err := compile(RuleSet{Default: &Rule{Limits: []hybrid.Limit{hybrid.PerMinute(100), leaky}, MaxDelay: 120 * time.Millisecond}}, DefaultPrefix, nil)
	if err != nil {
		t.Fatal(err)
	}
	rl := s.Default
	tests := []struct {
		name string
		res  hybrid.Result
		want rules.Decision
	}{
		{"allowed", hybrid.Result{Allowed: true}, rules.Decision{Allowed: true}},
		{"delayed", hybrid.Result{Allowed: true, Delay: 120 * time.Millisecond}, rules.Decision{Allowed: true}},
		{"denied", hybrid.Result{RetryAfter: 3 * time.Second}, rules.Decision{Retry: 3 * time.Second}},
		// 30ms over; its place in the queue is given back.
		{"delay above max", hybrid.Result{Allowed: true, Delay: 150 * time.Millisecond}, rules.Decision{Retry: 30 * time.Millisecond}},
	}
	for _, tt := range tests {
		if got := rl.Decide(tt.res); got != tt.want {
			t.Errorf("%s: decide(%+v) = %+v, want %+v", tt.name, tt.res, got, tt.want)
		}
	}
}
