package faulttest

import (
	"testing"
	"time"

	. "github.com/hybridlimit/hybridlimit/hybrid"
)

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
				// key in the phase (31 in one CI run), and not evenly (a
				// key asked 44 times beside one asked 28): then what each
				// key was offered, up to 40.
				offered := float64(got.calls[i]) / float64(keys)
				var least float64
				for _, k := range c.keys[i] {
					least += float64(min(40, got.keyCalls[k]))
				}
				least /= float64(keys)
				if want := 40 + 40*elapsed.Minutes() + 2; perKey > want || perKey < least {
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
