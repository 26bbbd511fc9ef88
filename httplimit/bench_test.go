package httplimit

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/hybridlimit/hybridlimit/hybrid"
)

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
		if match(s, r, "") == nil {
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
