package hybrid

import (
	"context"
	"testing"
	"time"
)

// TestNamedLimitKeepsBudget: a named limit that changes keeps its budget
// across instances, for every algorithm: a client that used 80 of 100 has
// exactly 120 left when another instance enforces 200 under the same name,
// and is denied at once when it is lowered to 50 (or 50 of 100 used). An
// unnamed limit that changes starts full (50 more admitted), as
// documented. An hour's period keeps refills out of the counts.
func TestNamedLimitKeepsBudget(t *testing.T) {
	ctx := context.Background()
	cfg := Config{Lease: LeaseConfig{Disable: true}}
	old, ms := newMini(t, 2, cfg)
	cfg.Addrs = []string{ms[0].Addr(), ms[1].Addr()}
	reloaded, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reloaded.Close() })
	admit := func(l *Limiter, key string, lim Limit, calls int) int {
		t.Helper()
		n := 0
		for range calls {
			r, err := l.Allow(ctx, key, lim)
			if err != nil {
				t.Fatal(err)
			}
			if r.Source != SourceRemote && r.Source != SourceDenyCache {
				t.Fatalf("%v answered by %v", lim, r.Source)
			}
			if r.Allowed {
				n++
			}
		}
		return n
	}
	for _, alg := range []Algorithm{TokenBucket, LeakyBucket, FixedWindow, SlidingWindowLog, SlidingWindowCounter} {
		t.Run(alg.String(), func(t *testing.T) {
			lim := func(rate int64, name string) Limit {
				return Limit{Algorithm: alg, Rate: rate, Period: time.Hour, Name: name}
			}
			key := "named:" + alg.String()
			if n := admit(old, key, lim(100, "api"), 80); n != 80 {
				t.Fatalf("admitted %d of 80 under 100/h", n)
			}
			if n := admit(reloaded, key, lim(200, "api"), 130); n != 120 {
				t.Errorf("raised to 200/h with 80 in use: admitted %d, want 120", n)
			}
			if n := admit(old, key, lim(50, "api"), 10); n != 0 {
				t.Errorf("lowered to 50/h with 200 in use: admitted %d, want 0", n)
			}
			key = "named-lowered:" + alg.String()
			admit(old, key, lim(100, "api"), 50)
			if n := admit(reloaded, key, lim(50, "api"), 10); n != 0 {
				t.Errorf("lowered to 50/h with 50 in use: admitted %d, want 0", n)
			}
			key = "unnamed:" + alg.String()
			if n := admit(old, key, lim(100, ""), 80); n != 80 {
				t.Fatalf("admitted %d of 80 under 100/h", n)
			}
			if n := admit(reloaded, key, lim(50, ""), 60); n != 50 {
				t.Errorf("unnamed, changed to 50/h: admitted %d, want a fresh 50", n)
			}
		})
	}
}
