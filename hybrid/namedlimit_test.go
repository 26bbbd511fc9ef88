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

// TestNamedLimitChangeUnderLoad is the fault suite's limit change: 24
// callers on 3 real redis-server nodes (behind toxiproxy, no toxic), with
// leases and the denial cache on, use up PerMinute(40) on every key, then
// the limit is lowered to 20 a minute while they go on. Under a name, the
// second phase admits per key only what refills (20 a minute); without
// one, every key starts afresh and admits about 20 more. Bounded: two phases of 1.2 s and 0.8 s, at most 400,000 calls each.
func TestNamedLimitChangeUnderLoad(t *testing.T) {
	const workers = 24
	for _, name := range []string{"rule#0", ""} {
		t.Run("name="+name, func(t *testing.T) {
			c := newToxicCluster(t, Config{Lease: LeaseConfig{HotRate: 100}})
			start := time.Now()
			before := Limit{Rate: 40, Period: time.Minute, Name: name}
			after := Limit{Rate: 20, Period: time.Minute, Name: name}
			got := c.drive(workers, 1200*time.Millisecond, before, nil)
			rec := c.drive(workers, 800*time.Millisecond, after, nil)
			keys := int64(len(c.keys[0]))
			elapsed := time.Since(start)
			t.Logf("before: %v; after: %v", got, rec)
			if got.errs+rec.errs != 0 {
				t.Errorf("%d errors reached callers", got.errs+rec.errs)
			}
			for i := range 3 {
				if got.notRemote(i)+rec.notRemote(i) > 0.02 {
					t.Errorf("node %d: %.2f%% and %.2f%% of answers not from Redis", i, 100*got.notRemote(i), 100*rec.notRemote(i))
				}
				perKey := float64(got.admitted[i]) / float64(keys)
				// Every key's 40 units are admitted: a limit of 40 is not
				// leased (its lease could not hold 2 units at MaxFraction
				// 1 %), and nothing withholds (issue 23; a hot key with a
				// lease and cached denials used to admit a few fewer). On
				// a loaded machine the callers may offer fewer than 40 a
				// key in the phase (31 in one CI run): then what they
				// offer.
				offered := float64(got.calls[i]) / float64(keys)
				if want, least := 40+40*elapsed.Minutes()+2, min(40, offered); perKey > want || perKey < least {
					t.Errorf("node %d: %.1f admitted per key under 40/min (%.1f offered), want %.1f to %.1f", i, perKey, offered, least, want)
				}
				perKey = float64(rec.admitted[i]) / float64(keys)
				refill := 20*elapsed.Minutes() + 1 // what refilled, and rounding
				switch {
				case name != "" && perKey > refill:
					t.Errorf("node %d: named, lowered to 20/min: %.1f admitted per key, want <= %.1f (what refilled)", i, perKey, refill)
				case name == "" && perKey < min(16, 0.8*float64(rec.calls[i])/float64(keys)):
					t.Errorf("node %d: unnamed, changed to 20/min: %.1f admitted per key, want about 20 (a fresh budget)", i, perKey)
				}
			}
		})
	}
}
