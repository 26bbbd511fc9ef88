package httplimit

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/hybridlimit/hybridlimit/hybrid"
)

// BenchmarkClientIP measures the walk of a forwarding header, by number of
// trusted hops to skip.
func BenchmarkClientIP(b *testing.B) {
	p := newResolver(mustTrusted(b, "10.0.0.0/8"), "X-Forwarded-For")
	for _, tt := range []struct{ name, xff string }{
		{"hops=0", "203.0.113.7"},
		{"hops=3", "198.51.100.1, 203.0.113.7, 10.0.0.5, 10.0.0.4, 10.0.0.3"},
	} {
		b.Run(tt.name, func(b *testing.B) {
			h := http.Header{"X-Forwarded-For": {tt.xff}}
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := p.clientIP("10.0.0.1:443", h); !ok {
					b.Fatal("no address")
				}
			}
		})
	}
}

// BenchmarkMatch measures rule selection by the private ServeMux.
func BenchmarkMatch(b *testing.B) {
	s, _, err := compile(RuleSet{
		Rules: []Rule{
			{Name: "items", Route: "GET /items/{id}", Limits: perMin},
			{Name: "upload", Route: "POST /upload/", Limits: perMin},
			{Name: "pro", Tier: "pro", Limits: perMin},
		},
		Default: &Rule{Limits: perMin},
	}, DefaultPrefix, nil)
	if err != nil {
		b.Fatal(err)
	}
	r := httptest.NewRequest("GET", "/items/42", nil)
	b.ReportAllocs()
	for b.Loop() {
		if s.match(r, "") == nil {
			b.Fatal("no rule")
		}
	}
}

// BenchmarkServeDenied measures the middleware around a decision answered
// in process (the denial cache): what an abusive client costs, 429 body
// included. Run with -cpu to vary the parallelism.
func BenchmarkServeDenied(b *testing.B) {
	lim, _ := newMini(b)
	mw := newMiddleware(b, lim, Config{Rules: RuleSet{Default: &Rule{Limits: []hybrid.Limit{hybrid.PerHour(1)}}}})
	h := mw.Wrap(ok)
	do(h, "GET", "/")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = "198.51.100.1:5000"
		for pb.Next() {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusTooManyRequests {
				b.Fatalf("status %d, want 429", w.Code)
			}
		}
	})
	b.ReportMetric(float64(mw.Stats().Rules[0].Denied)/float64(b.N), "denied/op")
}
