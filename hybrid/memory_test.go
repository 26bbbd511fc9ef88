package hybrid

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
)

var memFlood = flag.Int("memflood", 50_000, "keys held by the bounds in TestMemoryPlateaus (the figures of docs/deployment.md: 1000000, the defaults)")

// heap is the live heap after a collection.
func heap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// TestMemoryPlateaus floods the in-process parts with distinct keys, 5
// times their bound, and checks that memory stops growing at the bound;
// it logs the bytes each held key costs. Keys are "flood:<n>", 11 to 13
// bytes, as an IP address or a user id would be.
//
//   - The fallback (Config.MaxLocalKeys), with every node down.
//   - The denial cache (DenyCache.MaxKeys).
//
// Run with -memflood=1000000 for the defaults (about 20 s).
func TestMemoryPlateaus(t *testing.T) {
	bound := *memFlood
	t.Run("fallback", func(t *testing.T) {
		down := redistest.StartN(t, 1)[0]
		addr := down.Addr()
		if err := down.Stop(); err != nil {
			t.Fatal(err)
		}
		lim, err := New(Config{Addrs: []string{addr}, MaxLocalKeys: bound, Lease: LeaseConfig{Disable: true}})
		if err != nil {
			t.Fatal(err)
		}
		defer lim.Close()
		ctx := context.Background()
		base := heap()
		var at []int64
		for round := range 5 {
			for i := round * bound; i < (round+1)*bound; i++ {
				if _, err := lim.Allow(ctx, fmt.Sprintf("flood:%d", i), PerMinute(100)); err != nil {
					t.Fatal(err)
				}
			}
			at = append(at, heap()-base)
		}
		perKey := float64(at[0]) / float64(bound)
		t.Logf("fallback, MaxLocalKeys %d: heap growth after each flood of %d keys %v; %.0f B per key held", bound, bound, at, perKey)
		if grow := at[4] - at[0]; float64(grow) > 0.1*float64(at[0]) {
			t.Errorf("the fallback grew by %d B after it was full (%d B at the bound): no plateau", grow, at[0])
		}
		if st := lim.Stats(); st.Decisions[SourceFallback] != int64(5*bound) {
			t.Errorf("%d fallback answers, want %d", st.Decisions[SourceFallback], 5*bound)
		}
	})
	t.Run("deny-cache", func(t *testing.T) {
		c := newDenyCache(bound)
		lims := []Limit{PerMinute(100)}
		r := Result{Limit: lims[0], RetryAfter: time.Minute, ResetAfter: time.Minute}
		base := heap()
		var at []int64
		for round := range 5 {
			for i := round * bound; i < (round+1)*bound; i++ {
				c.put(fmt.Sprintf("flood:%d", i), 1, lims, r, r.RetryAfter)
			}
			at = append(at, heap()-base)
		}
		t.Logf("denial cache, MaxKeys %d: heap growth after each flood %v; %.0f B per key held; %d keys held", bound, at, float64(at[0])/float64(bound), c.len())
		if grow := at[4] - at[0]; float64(grow) > 0.1*float64(at[0]) {
			t.Errorf("the denial cache grew by %d B after it was full (%d B at the bound): no plateau", grow, at[0])
		}
		runtime.KeepAlive(c)
	})
}
