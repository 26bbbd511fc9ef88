package hybrid

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
)

func nodeCalls(l *Limiter) int64 {
	var n int64
	for _, nd := range l.Stats().Nodes {
		n += nd.Calls
	}
	return n
}

func TestDenyCacheAnswersWithoutRedis(t *testing.T) {
	lim, _ := newMini(t, 2, Config{})
	ctx := context.Background()
	l := Limit{Rate: 10, Period: time.Second, Burst: 1} // one per 100ms
	if r, err := lim.Allow(ctx, "abuser", l); err != nil || !r.Allowed {
		t.Fatalf("first Allow = %+v, %v", r, err)
	}
	r, err := lim.Allow(ctx, "abuser", l)
	if err != nil || r.Allowed || r.Source != SourceRemote || r.RetryAfter <= 0 {
		t.Fatalf("second Allow = %+v, %v; want denied by Redis", r, err)
	}
	calls := nodeCalls(lim)
	prev := r.RetryAfter
	for i := 0; i < 50; i++ {
		r, err := lim.Allow(ctx, "abuser", l)
		if err != nil || r.Allowed || r.Source != SourceDenyCache {
			t.Fatalf("Allow #%d = %+v, %v; want denied by the cache", i, r, err)
		}
		if r.RetryAfter <= 0 || r.RetryAfter > prev || r.Limit != l {
			t.Fatalf("Allow #%d RetryAfter = %v after %v; want counting down, above 0", i, r.RetryAfter, prev)
		}
		prev = r.RetryAfter
	}
	if got := nodeCalls(lim); got != calls {
		t.Errorf("cached denials made %d Redis calls, want 0", got-calls)
	}
	// Once RetryAfter has passed, Redis decides again, and admits.
	time.Sleep(prev + 5*time.Millisecond)
	r, err = lim.Allow(ctx, "abuser", l)
	if err != nil || !r.Allowed || r.Source != SourceRemote {
		t.Fatalf("Allow after RetryAfter = %+v, %v; want allowed by Redis", r, err)
	}
	if st := lim.Stats(); st.Decisions[SourceDenyCache] != 50 {
		t.Errorf("Stats().Decisions[deny-cache] = %d, want 50", st.Decisions[SourceDenyCache])
	}
}

func TestDenyCacheMatchesOnlyTheSameRequest(t *testing.T) {
	lim, _ := newMini(t, 1, Config{})
	ctx := context.Background()
	l := PerHour(10)
	if _, err := lim.AllowN(ctx, "k", 8, l); err != nil {
		t.Fatal(err)
	}
	r, err := lim.AllowN(ctx, "k", 5, l)
	if err != nil || r.Allowed || r.Source != SourceRemote {
		t.Fatalf("AllowN(5) = %+v, %v; want denied by Redis", r, err)
	}
	// A smaller cost may fit: Redis decides.
	r, err = lim.AllowN(ctx, "k", 2, l)
	if err != nil || !r.Allowed || r.Source != SourceRemote {
		t.Fatalf("AllowN(2) = %+v, %v; want allowed by Redis", r, err)
	}
	// The same or a larger cost with the same limits: the cache.
	r, err = lim.AllowN(ctx, "k", 6, l)
	if err != nil || r.Allowed || r.Source != SourceDenyCache {
		t.Fatalf("AllowN(6) = %+v, %v; want denied by the cache", r, err)
	}
	// Other limits: Redis decides.
	r, err = lim.AllowN(ctx, "k", 5, l, PerMinute(100))
	if err != nil || r.Source != SourceRemote {
		t.Fatalf("AllowN(5, two limits) = %+v, %v; want Redis", r, err)
	}
}

// TestDenyCacheValidatesWhatItDidNotSee: the cache answers a request equal
// to the one Redis denied before validating it, but a larger cost is
// validated first: beyond the capacity it is bad input, an error, not a
// cached denial.
func TestDenyCacheValidatesWhatItDidNotSee(t *testing.T) {
	lim, _ := newMini(t, 1, Config{Lease: LeaseConfig{Disable: true}})
	ctx := context.Background()
	l := PerHour(10)
	if _, err := lim.AllowN(ctx, "k", 10, l); err != nil {
		t.Fatal(err)
	}
	if r, err := lim.AllowN(ctx, "k", 3, l); err != nil || r.Allowed || r.Source != SourceRemote {
		t.Fatalf("AllowN(3) = %+v, %v; want denied by Redis", r, err)
	}
	if r, err := lim.AllowN(ctx, "k", 3, l); err != nil || r.Allowed || r.Source != SourceDenyCache {
		t.Errorf("AllowN(3) again = %+v, %v; want denied by the cache", r, err)
	}
	if r, err := lim.AllowN(ctx, "k", 11, l); err == nil {
		t.Errorf("AllowN(11) with a capacity of 10 = %+v, nil; want an error", r)
	}
	if r, err := lim.AllowN(ctx, "k", 4, l); err != nil || r.Allowed || r.Source != SourceDenyCache {
		t.Errorf("AllowN(4) = %+v, %v; want denied by the cache", r, err)
	}
}

func TestDenyCacheBounded(t *testing.T) {
	lim, _ := newMini(t, 1, Config{DenyCache: DenyCacheConfig{MaxKeys: 128}})
	ctx := context.Background()
	l := PerHour(1)
	for i := 0; i < 1000; i++ {
		key := fmt.Sprintf("flood:%d", i)
		lim.Allow(ctx, key, l)
		if r, _ := lim.Allow(ctx, key, l); r.Allowed {
			t.Fatalf("second Allow of %s admitted", key)
		}
	}
	if n := lim.Stats().DenyCacheKeys; n == 0 || n > 128 {
		t.Errorf("DenyCacheKeys = %d after 1000 denied keys, want 1..128", n)
	}
}

func TestDenyCacheDisabled(t *testing.T) {
	lim, _ := newMini(t, 1, Config{DenyCache: DenyCacheConfig{Disable: true}})
	ctx := context.Background()
	l := PerHour(1)
	for i := 0; i < 5; i++ {
		r, err := lim.Allow(ctx, "k", l)
		if err != nil || r.Source != SourceRemote {
			t.Fatalf("Allow #%d = %+v, %v; want every answer from Redis", i, r, err)
		}
	}
}

func TestDenyCacheHitAllocatesNothing(t *testing.T) {
	lim, _ := newMini(t, 1, Config{})
	ctx := context.Background()
	limits := []Limit{PerHour(1), PerMinute(10)}
	lim.Allow(ctx, "k", limits...)
	if r, _ := lim.Allow(ctx, "k", limits...); r.Source != SourceRemote || r.Allowed {
		t.Fatalf("second Allow = %+v, want denied by Redis", r)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if r, _ := lim.Allow(ctx, "k", limits...); r.Source != SourceDenyCache {
			t.Fatalf("Allow = %+v, want the cache", r)
		}
	})
	if allocs != 0 {
		t.Errorf("a cached denial allocates %v times, want 0", allocs)
	}
}

// TestSpinningCallersDoNotStarveRedis is the regression test for callers
// that loop on Allow without blocking (here 64 goroutines over 4 instances
// on one over-limit key): their answers from the denial cache kept both
// processors busy for whole time slices, the goroutine whose Redis reply
// had arrived waited past its Timeout, the breaker opened and every
// instance's fallback admitted a full limit of its own (4.6× the limit).
//
// spinTimeout is four times the default Timeout, so that a CI machine busy
// with other packages does not time calls out on its own; the starvation
// held replies for hundreds of milliseconds, and still fails this test.
const spinTimeout = 200 * time.Millisecond

func TestSpinningCallersDoNotStarveRedis(t *testing.T) {
	srv := redistest.Start(t)
	var lims []*Limiter
	for i := 0; i < 4; i++ {
		lim, err := New(Config{Addrs: []string{srv.Addr()}, Timeout: spinTimeout})
		if err != nil {
			t.Fatal(err)
		}
		defer lim.Close()
		lims = append(lims, lim)
	}
	l := PerSecond(10)
	const run = 2 * time.Second
	var admitted atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for g := 0; g < 64; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lim := lims[g%len(lims)]
			for i := 0; i < 50_000_000 && time.Since(start) < run; i++ {
				if r, _ := lim.Allow(context.Background(), "abuser", l); r.Allowed {
					admitted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	ideal := float64(l.Rate) + float64(l.Rate)*time.Since(start).Seconds()
	var opened, fallback int64
	for _, lim := range lims {
		st := lim.Stats()
		opened += st.Nodes[0].Opened
		fallback += st.Decisions[SourceFallback]
	}
	t.Logf("admitted %d, ideal %.0f; breaker opened %d times; %d fallback answers", admitted.Load(), ideal, opened, fallback)
	// A busy CI machine may time out a call or two, and each is answered by
	// the fallback; a starved process answers whole seconds by it.
	if float64(admitted.Load()) > 1.5*ideal {
		t.Errorf("admitted %d, want at most 1.5 × ideal %.0f", admitted.Load(), ideal)
	}
}
