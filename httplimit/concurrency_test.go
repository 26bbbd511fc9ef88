package httplimit

import (
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/hybridlimit/hybridlimit/hybrid"
	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
)

// hammer sends workers×perWorker requests for GET /hot from one client
// through h while swap changes the other rules, and returns the statuses
// counted.
func hammer(t *testing.T, hs []http.Handler, workers, perWorker int, swap func(i int)) (ok200, tooMany int64) {
	t.Helper()
	var wg sync.WaitGroup
	var a, d, other atomic.Int64
	for w := range workers {
		h := hs[w%len(hs)]
		wg.Go(func() {
			for range perWorker {
				switch rec := do(h, "GET", "/hot"); rec.Code {
				case 200:
					a.Add(1)
				case 429:
					if s, err := strconv.Atoi(rec.Header().Get("Retry-After")); err != nil || s < 1 {
						t.Errorf("Retry-After = %q, want whole seconds >= 1", rec.Header().Get("Retry-After"))
					}
					d.Add(1)
				default:
					other.Add(1)
				}
			}
		})
	}
	if swap != nil {
		wg.Go(func() {
			for i := range 50 {
				swap(i)
				time.Sleep(time.Millisecond)
			}
		})
	}
	wg.Wait()
	if other.Load() != 0 {
		t.Errorf("%d responses neither 200 nor 429", other.Load())
	}
	return a.Load(), d.Load()
}

// hotRules limits /hot to limit a minute, and adds a rule that changes
// with i, so that reloads happen while /hot is served.
func hotRules(limit int64, i int) RuleSet {
	return RuleSet{Rules: []Rule{
		{Name: "hot", Route: "GET /hot", Limits: []hybrid.Limit{hybrid.PerMinute(limit)}},
		{Name: "churn", Route: "/churn/" + strconv.Itoa(i%3) + "/", Limits: []hybrid.Limit{hybrid.PerMinute(int64(i + 1))}},
	}}
}

// TestConcurrentRequestsAndReloads runs requests and reloads at once (run
// it with -race): the hot rule admits exactly its limit, reloads of other
// rules notwithstanding.
func TestConcurrentRequestsAndReloads(t *testing.T) {
	m := miniredis.RunT(t)
	lim, err := hybrid.New(hybrid.Config{Addrs: []string{m.Addr()}, Timeout: 2 * time.Second, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer lim.Close()
	const limit = 100
	mw := newMiddleware(t, lim, Config{Rules: hotRules(limit, 0)})
	allowed, denied := hammer(t, []http.Handler{mw.Wrap(ok)}, 8, 50, func(i int) {
		if err := mw.SetRules(hotRules(limit, i)); err != nil {
			t.Error(err)
		}
	})
	checkAdmitted(t, lim, allowed, denied, limit, 400)
	if st := mw.Stats(); st.Reloads < 1 || st.Rules[0].Allowed != allowed || st.Rules[0].Denied != denied {
		t.Errorf("Stats = %+v, want the hot rule's counts (%d, %d) kept over %d reloads", st, allowed, denied, st.Reloads)
	}
}

// checkAdmitted checks that exactly limit requests passed, unless some
// were decided in process because Redis was slow (then at most limit
// more, the fallback's own budget).
func checkAdmitted(t *testing.T, lim *hybrid.Limiter, allowed, denied, limit, total int64) {
	t.Helper()
	if allowed+denied != total {
		t.Errorf("allowed+denied = %d+%d, want %d", allowed, denied, total)
	}
	if fb := lim.Stats().Decisions[hybrid.SourceFallback]; fb > 0 {
		t.Logf("%d decisions fell back", fb)
		if allowed < limit || allowed > 2*limit {
			t.Errorf("allowed = %d, want %d to %d", allowed, limit, 2*limit)
		}
		return
	}
	if allowed != limit {
		t.Errorf("allowed = %d, want %d", allowed, limit)
	}
}

// TestRealRedis runs the middleware on real redis-server processes: two
// instances (two Limiters, as two servers would have) share one limit.
func TestRealRedis(t *testing.T) {
	srvs := redistest.StartN(t, 2)
	newLim := func() *hybrid.Limiter {
		lim, err := hybrid.New(hybrid.Config{Addrs: []string{srvs[0].Addr(), srvs[1].Addr()}, Timeout: 2 * time.Second, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { lim.Close() })
		return lim
	}

	t.Run("headers", func(t *testing.T) {
		mw := newMiddleware(t, newLim(), Config{Headers: HeadersBoth, Rules: RuleSet{Default: &Rule{Name: "d", Limits: []hybrid.Limit{hybrid.PerHour(2)}}}})
		h := mw.Wrap(ok)
		for i, want := range []string{`"d";r=1;t=1800`, `"d";r=0;t=1800`} {
			w := do(h, "GET", "/x", "RemoteAddr", "203.0.113.9:1")
			if w.Code != 200 || w.Header().Get("RateLimit") != want || w.Header().Get("X-RateLimit-Remaining") != strconv.Itoa(1-i) {
				t.Errorf("request %d = %d %v, want 200 with RateLimit %s", i+1, w.Code, w.Header(), want)
			}
		}
		w := do(h, "GET", "/x", "RemoteAddr", "203.0.113.9:1")
		if w.Code != 429 || w.Header().Get("Retry-After") != "1800" || w.Header().Get("RateLimit") != `"d";r=0;t=1800` {
			t.Errorf("request 3 = %d %v, want 429 with Retry-After 1800", w.Code, w.Header())
		}
	})

	t.Run("two instances", func(t *testing.T) {
		const limit = 100
		a := newMiddleware(t, newLim(), Config{Rules: hotRules(limit, 0)})
		b := newMiddleware(t, newLim(), Config{Rules: hotRules(limit, 0)})
		allowed, denied := hammer(t, []http.Handler{a.Wrap(ok), b.Wrap(ok)}, 8, 50, nil)
		// Units leased by one instance and unspent are not the other's, so
		// fewer than the limit may pass; never more.
		if allowed+denied != 400 || allowed > limit || allowed == 0 {
			t.Errorf("allowed, denied = %d, %d; want at most %d of 400 allowed", allowed, denied, limit)
		}
	})
}
