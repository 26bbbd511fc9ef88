package grpclimit

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/hybridlimit/hybridlimit/hybrid"
)

// hotRules limits Check to limit a minute, and adds a rule that changes
// with i, so that reloads happen while Check is served.
func hotRules(limit int64, i int) RuleSet {
	return RuleSet{Rules: []Rule{
		{Name: "hot", Method: mCheck, Limits: []hybrid.Limit{hybrid.PerMinute(limit)}},
		{Name: "churn", Method: "/churn.S" + strconv.Itoa(i%3) + "/*", Limits: []hybrid.Limit{hybrid.PerMinute(int64(i + 1))}},
	}}
}

// TestConcurrentCallsAndReloads sends calls from many goroutines over two
// connections while the rules are replaced (run it with -race): the hot
// rule admits exactly its limit, every other call is ResourceExhausted,
// and the counters agree.
func TestConcurrentCallsAndReloads(t *testing.T) {
	lim := newLimiter(t)
	const limit, workers, perWorker = 100, 8, 40 // 320 calls, bounded
	ic := newInterceptor(t, lim, Config{Rules: hotRules(limit, 0)})
	srv := serve(t, ic)
	clients := []healthpb.HealthClient{healthpb.NewHealthClient(dial(t, srv.addr)), healthpb.NewHealthClient(dial(t, srv.addr))}
	ctx := ctxT(t)
	var allowed, denied, other atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		c := clients[w%len(clients)]
		wg.Go(func() {
			for range perWorker {
				_, err := c.Check(ctx, &healthpb.HealthCheckRequest{})
				switch status.Code(err) {
				case codes.OK:
					allowed.Add(1)
				case codes.ResourceExhausted:
					denied.Add(1)
				default:
					other.Add(1)
				}
			}
		})
	}
	wg.Go(func() {
		for i := range 50 {
			if err := ic.SetRules(hotRules(limit, i)); err != nil {
				t.Error(err)
			}
			time.Sleep(time.Millisecond)
		}
	})
	wg.Wait()
	if other.Load() != 0 {
		t.Errorf("%d calls neither OK nor ResourceExhausted", other.Load())
	}
	if allowed.Load()+denied.Load() != workers*perWorker {
		t.Errorf("allowed+denied = %d+%d, want %d", allowed.Load(), denied.Load(), workers*perWorker)
	}
	if fb := lim.Stats().Decisions[hybrid.SourceFallback]; fb > 0 {
		// Redis was slow on a loaded machine: the fallback's own budget
		// may add up to one limit.
		t.Logf("%d decisions fell back", fb)
		if a := allowed.Load(); a < limit || a > 2*limit {
			t.Errorf("allowed = %d, want %d to %d", a, limit, 2*limit)
		}
	} else if a := allowed.Load(); a != limit {
		t.Errorf("allowed = %d, want %d", a, limit)
	}
	if st := ic.Stats(); st.Reloads < 1 || st.Rules[0].Allowed != allowed.Load() || st.Rules[0].Denied != denied.Load() {
		t.Errorf("Stats = %+v, want the hot rule's counts (%d, %d) kept over %d reloads", st, allowed.Load(), denied.Load(), st.Reloads)
	}
}
