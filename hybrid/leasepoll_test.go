package hybrid

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
)

// TestShortLeasePollsTheBindingLimit: a hot key over a fast limit that also
// has a slow one (5/s and 8/min) is admitted as the fast limit refills. Its
// lease, short, waited for a batch to refill at the slowest of its limits'
// rates (7.5 s for a unit of 8/min) although 5/s was the one that bound, so
// the key was denied in process until the lease's TTL ended it: 5 admitted
// in the first 900 ms, where an exact limiter admits 8 (5, then one every
// 200 ms until 8/min is spent). One caller hammers the key; the denial
// cache is off so that the lease, not a cached denial, answers between
// refills (bench's -limit 5/s+8/m found it with the cache on).
func TestShortLeasePollsTheBindingLimit(t *testing.T) {
	srv := redistest.Start(t)
	lim, err := New(Config{Addrs: []string{srv.Addr()}, Timeout: time.Second, Logger: slog.New(slog.DiscardHandler), DenyCache: DenyCacheConfig{Disable: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer lim.Close()
	ctx := context.Background()
	fast := Limit{Rate: 5, Period: time.Second}
	slow := Limit{Rate: 8, Period: time.Minute}
	admitted := 0
	var at []time.Duration
	start := time.Now()
	for time.Since(start) < 900*time.Millisecond {
		r, err := lim.Allow(ctx, "k", fast, slow)
		if err != nil {
			t.Fatal(err)
		}
		if r.Allowed {
			admitted++
			at = append(at, time.Since(start).Round(time.Millisecond))
		}
	}
	if admitted < 7 || admitted > 8 {
		t.Errorf("admitted %d in 900 ms under 5/s and 8/min, at %v; want 8 (7 on a slow machine)", admitted, at)
	}
}
