package local

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/hybridlimit/hybridlimit/limit"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// clock is a settable clock for Config.Now, safe for concurrent use.
type clock struct{ us atomic.Int64 }

func newClock(t time.Time) *clock {
	c := &clock{}
	c.set(t)
	return c
}

func (c *clock) now() time.Time      { return time.UnixMicro(c.us.Load()) }
func (c *clock) set(t time.Time)     { c.us.Store(t.UnixMicro()) }
func (c *clock) add(d time.Duration) { c.us.Add(d.Microseconds()) }

// newLimiter returns a Limiter on clk, failing the test on error.
func newLimiter(t testing.TB, cfg Config, clk *clock) *Limiter {
	t.Helper()
	if clk != nil {
		cfg.Now = clk.now
	}
	l, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%+v) error = %v", cfg, err)
	}
	return l
}

// mustAllow runs AllowN and fails the test on error.
func mustAllow(t testing.TB, l *Limiter, key string, cost int64, limits ...limit.Limit) limit.Decision {
	t.Helper()
	d, err := l.AllowN(key, cost, limits...)
	if err != nil {
		t.Fatalf("AllowN(%q, %d, %v) error = %v", key, cost, limits, err)
	}
	return d
}

func TestNew(t *testing.T) {
	tests := []struct {
		name       string
		cfg        Config
		wantKeys   int
		wantShards int
		wantErr    bool
	}{
		{"zero means defaults", Config{}, DefaultMaxKeys, DefaultShards, false},
		{"shards rounded up", Config{Shards: 300}, DefaultMaxKeys, 512, false},
		{"one shard", Config{Shards: 1}, DefaultMaxKeys, 1, false},
		{"shards lowered for few keys", Config{MaxKeys: 100}, 100, 4, false},
		{"a single shard below 32 keys", Config{MaxKeys: 31, Shards: 64}, 31, 1, false},
		{"one key", Config{MaxKeys: 1}, 1, 1, false},
		{"most shards", Config{Shards: MaxShards, MaxKeys: 1 << 30}, 1 << 30, MaxShards, false},
		{"negative MaxKeys", Config{MaxKeys: -1}, 0, 0, true},
		{"negative Shards", Config{Shards: -8}, 0, 0, true},
		{"too many shards", Config{Shards: MaxShards + 1}, 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := New(tt.cfg)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("New(%+v) error = nil, want an error", tt.cfg)
				}
				return
			}
			if err != nil {
				t.Fatalf("New(%+v) error = %v", tt.cfg, err)
			}
			got := l.Config()
			if got.MaxKeys != tt.wantKeys || got.Shards != tt.wantShards || got.Now == nil {
				t.Fatalf("New(%+v).Config() = {MaxKeys: %d, Shards: %d, Now: %v}, want {%d, %d, non-nil}",
					tt.cfg, got.MaxKeys, got.Shards, got.Now != nil, tt.wantKeys, tt.wantShards)
			}
			total, least := 0, l.shards[0].cap
			for i := range l.shards {
				total += l.shards[i].cap
				least = min(least, l.shards[i].cap)
			}
			if total != got.MaxKeys {
				t.Errorf("shard capacities sum to %d, want MaxKeys %d", total, got.MaxKeys)
			}
			if got.MaxKeys >= minPerShard && least < minPerShard {
				t.Errorf("smallest shard holds %d entries, want at least %d", least, minPerShard)
			}
		})
	}
}

func TestNewCopiesConfig(t *testing.T) {
	cfg := Config{MaxKeys: 64}
	l := newLimiter(t, cfg, nil)
	cfg.MaxKeys = 1
	if got := l.Config().MaxKeys; got != 64 {
		t.Fatalf("Config().MaxKeys = %d after the caller's copy changed, want 64", got)
	}
}

func TestShardSize(t *testing.T) {
	if got := unsafe.Sizeof(shard{}); got%64 != 0 {
		t.Fatalf("unsafe.Sizeof(shard{}) = %d, want a multiple of 64", got)
	}
}

// TestEntryLayout checks what the entry's comment promises: 192 bytes, 64-
// byte aligned by the allocator, the State and a short key's first 16 bytes
// in the second cache line, everything else a hit reads in the first.
func TestEntryLayout(t *testing.T) {
	var e entry
	if got := unsafe.Sizeof(e); got != 192 {
		t.Fatalf("unsafe.Sizeof(entry{}) = %d, want 192", got)
	}
	if got := unsafe.Offsetof(e.used) + unsafe.Sizeof(e.used); got > 64 {
		t.Errorf("spec, key and used end at byte %d, want within the first 64", got)
	}
	if got := unsafe.Offsetof(e.state); got != 64 {
		t.Errorf("state at byte %d, want 64", got)
	}
	if got := unsafe.Offsetof(e.buf); got+16 > 128 {
		t.Errorf("key bytes at byte %d, want the first 16 within 128", got)
	}
	keep := make([]*entry, 100)
	for i := range keep {
		keep[i] = newEntry("user:" + strconv.Itoa(i))
		if p := uintptr(unsafe.Pointer(keep[i])); p%64 != 0 {
			t.Fatalf("entry %d allocated at %#x, not 64-byte aligned", i, p)
		}
		if keep[i].key != "user:"+strconv.Itoa(i) {
			t.Fatalf("entry %d keeps key %q", i, keep[i].key)
		}
	}
	long := strings.Repeat("k", inlineKey+1)
	if e := newEntry(long); e.key != long {
		t.Fatalf("long key kept as %q", e.key)
	}
}

func TestAllowN(t *testing.T) {
	fw := limit.Limit{Algorithm: limit.FixedWindow, Rate: 3, Period: time.Second}
	type step struct {
		key     string
		at      time.Duration
		cost    int64
		allowed bool
		remain  int64
	}
	tests := []struct {
		name   string
		limits []limit.Limit
		steps  []step
	}{
		{"keys are independent", []limit.Limit{limit.PerSecond(2)}, []step{
			{"a", 0, 2, true, 0},
			{"a", 0, 1, false, 0},
			{"b", 0, 1, true, 1},
			{"a", 500 * time.Millisecond, 1, true, 0},
		}},
		{"canonical forms share state", []limit.Limit{limit.PerSecond(3)}, []step{
			{"a", 0, 2, true, 1},
		}},
		{"equal limits share state across calls", []limit.Limit{fw}, []step{
			{"a", 0, 3, true, 0},
			{"a", 999 * time.Millisecond, 1, false, 0},
			{"a", time.Second, 1, true, 2},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock(t0)
			l := newLimiter(t, Config{}, clk)
			for i, st := range tt.steps {
				clk.set(t0.Add(st.at))
				d := mustAllow(t, l, st.key, st.cost, tt.limits...)
				if d.Allowed != st.allowed || d.Remaining != st.remain {
					t.Fatalf("step %d: AllowN(%q, %d) = %+v, want Allowed %v, Remaining %d", i, st.key, st.cost, d, st.allowed, st.remain)
				}
			}
		})
	}
}

// TestAllow checks that Allow is AllowN with a cost of 1 on Config.Now.
func TestAllow(t *testing.T) {
	clk := newClock(t0)
	l := newLimiter(t, Config{}, clk)
	d, err := l.Allow("k", limit.PerMinute(60))
	if err != nil || !d.Allowed || d.Remaining != 59 || d.ResetAfter != time.Second {
		t.Fatalf("Allow() = %+v, %v, want allowed, Remaining 59, ResetAfter 1s", d, err)
	}
}

// TestAllowAtBinding checks the index of the binding limit in the caller's
// list.
func TestAllowAtBinding(t *testing.T) {
	l := newLimiter(t, Config{}, nil)
	perSecond, perMinute, perHour := limit.PerSecond(2), limit.PerMinute(3), limit.PerHour(2)
	tests := []struct {
		key     string
		cost    int64
		limits  []limit.Limit
		allowed bool
		binding int
	}{
		{"a", 1, []limit.Limit{perMinute, perSecond}, true, 1},           // 2 left per minute, 1 per second
		{"b", 2, []limit.Limit{perSecond, perMinute}, true, 0},           // 0 left per second
		{"b", 1, []limit.Limit{perMinute, perHour, perSecond}, false, 2}, // denied per second
		{"c", 2, []limit.Limit{limit.PerSecond(5), perHour, perMinute}, true, 1},
	}
	for i, tt := range tests {
		d, b, err := l.AllowAt(tt.key, t0, tt.cost, tt.limits...)
		if err != nil {
			t.Fatalf("%d: AllowAt(%q, %d, %v) error = %v", i, tt.key, tt.cost, tt.limits, err)
		}
		if d.Allowed != tt.allowed || b != tt.binding {
			t.Fatalf("%d: AllowAt(%q, %d, %v) = %+v, binding %d, want Allowed %v, binding %d", i, tt.key, tt.cost, tt.limits, d, b, tt.allowed, tt.binding)
		}
	}
}

// TestCanonicalLimits checks that limits equal in canonical form share one
// entry, and that a Burst which the canonical form would hide is still
// refused.
func TestCanonicalLimits(t *testing.T) {
	l := newLimiter(t, Config{}, newClock(t0))
	explicit := limit.Limit{Rate: 10, Period: time.Second, Burst: 10}
	mustAllow(t, l, "k", 4, limit.PerSecond(10))
	if d := mustAllow(t, l, "k", 1, explicit); d.Remaining != 5 {
		t.Fatalf("AllowN(%v) after 4 units of PerSecond(10): Remaining = %d, want 5", explicit, d.Remaining)
	}
	window := limit.Limit{Algorithm: limit.FixedWindow, Rate: 10, Period: time.Second}
	mustAllow(t, l, "k", 4, window)
	withBurst := window
	withBurst.Burst = 10
	if d := mustAllow(t, l, "k", 1, withBurst); d.Remaining != 5 {
		t.Fatalf("AllowN(%v): Remaining = %d, want 5", withBurst, d.Remaining)
	}
	if got := l.Len(); got != 2 {
		t.Fatalf("Len() = %d, want 2", got)
	}
	negative := limit.Limit{Rate: 10, Period: time.Second, Burst: -1}
	badWindow := limit.Limit{Algorithm: limit.FixedWindow, Rate: 10, Period: time.Second, Burst: 7}
	for _, bad := range []limit.Limit{negative, badWindow} {
		for _, limits := range [][]limit.Limit{{bad}, {limit.PerHour(5), bad}} {
			if _, _, err := l.AllowAt("k", t0, 1, limits...); !errors.Is(err, limit.ErrInvalidLimit) {
				t.Errorf("AllowAt(%v) error = %v, want %v", limits, err, limit.ErrInvalidLimit)
			}
			if _, _, _, err := l.LeaseAt("k", t0, 1, limits...); !errors.Is(err, limit.ErrInvalidLimit) {
				t.Errorf("LeaseAt(%v) error = %v, want %v", limits, err, limit.ErrInvalidLimit)
			}
			l.GiveBack("k", t0, 3, limits...) // ignored
		}
	}
	if d := mustAllow(t, l, "k", 1, explicit); d.Remaining != 4 {
		t.Fatalf("AllowN(%v) after the bad requests: Remaining = %d, want 4", explicit, d.Remaining)
	}
}

func TestBadInputConsumesNothing(t *testing.T) {
	good := limit.PerSecond(10)
	window := limit.Limit{Algorithm: limit.FixedWindow, Rate: 5, Period: time.Minute}
	many := make([]limit.Limit, 5)
	for i := range many {
		many[i] = limit.PerSecond(int64(i + 1))
	}
	tests := []struct {
		name    string
		cfg     Config
		key     string
		cost    int64
		limits  []limit.Limit
		wantErr error
	}{
		{"empty key", Config{}, "", 1, []limit.Limit{good}, ErrInvalidKey},
		{"no limits", Config{}, "k", 1, nil, limit.ErrInvalidLimit},
		{"a limit twice", Config{}, "k", 1, []limit.Limit{window, good, window}, limit.ErrInvalidLimit},
		{"a limit twice, once canonical", Config{}, "k", 1, []limit.Limit{good, {Rate: 10, Period: time.Second, Burst: 10}}, limit.ErrInvalidLimit},
		{"negative burst", Config{}, "k", 1, []limit.Limit{{Rate: 10, Period: time.Second, Burst: -10}}, limit.ErrInvalidLimit},
		{"zero rate", Config{}, "k", 1, []limit.Limit{{Rate: 0, Period: time.Second}}, limit.ErrInvalidLimit},
		{"invalid second limit", Config{}, "k", 1, []limit.Limit{good, {Rate: 1, Period: -time.Second}}, limit.ErrInvalidLimit},
		{"invalid new limit after a known one", Config{}, "k", 1, []limit.Limit{window, {Algorithm: 9, Rate: 1, Period: time.Second}}, limit.ErrInvalidLimit},
		{"zero cost", Config{}, "k", 0, []limit.Limit{good}, limit.ErrInvalidCost},
		{"negative cost", Config{}, "k", -5, []limit.Limit{good, window}, limit.ErrInvalidCost},
		{"cost above capacity", Config{}, "k", 11, []limit.Limit{good}, limit.ErrCostExceedsLimit},
		{"cost above the second capacity", Config{}, "k", 6, []limit.Limit{good, window}, limit.ErrCostExceedsLimit},
		{"cost above a new limit's capacity", Config{}, "k", 3, []limit.Limit{good, limit.PerSecond(2)}, limit.ErrCostExceedsLimit},
		{"more limits than a shard holds", Config{MaxKeys: 4}, "k", 1, many, ErrTooManyLimits},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock(t0)
			l := newLimiter(t, tt.cfg, clk)
			control := newLimiter(t, tt.cfg, clk)
			for _, x := range []*Limiter{l, control} {
				mustAllow(t, x, "k", 4, good)
				mustAllow(t, x, "k", 2, window)
			}
			before := l.Len()
			if _, _, err := l.AllowAt(tt.key, clk.now(), tt.cost, tt.limits...); !errors.Is(err, tt.wantErr) {
				t.Fatalf("AllowAt(%q, %d, %v) error = %v, want %v", tt.key, tt.cost, tt.limits, err, tt.wantErr)
			}
			// A lease may ask for more than a capacity: it is granted less.
			if !errors.Is(tt.wantErr, limit.ErrCostExceedsLimit) {
				if _, _, _, err := l.LeaseAt(tt.key, clk.now(), tt.cost, tt.limits...); !errors.Is(err, tt.wantErr) {
					t.Fatalf("LeaseAt(%q, %d, %v) error = %v, want %v", tt.key, tt.cost, tt.limits, err, tt.wantErr)
				}
			}
			if got := l.Len(); got != before {
				t.Fatalf("Len() = %d after the bad request, want %d", got, before)
			}
			for _, lim := range []limit.Limit{good, window} {
				got, want := mustAllow(t, l, "k", 1, lim), mustAllow(t, control, "k", 1, lim)
				if got != want {
					t.Fatalf("AllowN(%v) after the bad request = %+v, want %+v", lim, got, want)
				}
			}
		})
	}
}

// TestDenialLeavesNoEntry checks that a denied request does not keep the
// entries it inserted for limits never seen before.
func TestDenialLeavesNoEntry(t *testing.T) {
	l := newLimiter(t, Config{}, newClock(t0))
	tight := limit.PerMinute(1)
	mustAllow(t, l, "k", 1, tight)
	if d := mustAllow(t, l, "k", 1, limit.PerSecond(5), tight, limit.PerHour(5)); d.Allowed {
		t.Fatalf("AllowN() = %+v, want denied", d)
	}
	if got := l.Len(); got != 1 {
		t.Fatalf("Len() = %d after the denial, want 1", got)
	}
	if g, d, err := l.Lease("k", 3, limit.PerSecond(5), tight); err != nil || g != 0 || d.Allowed {
		t.Fatalf("Lease() = %d, %+v, %v, want 0 granted", g, d, err)
	}
	if got := l.Len(); got != 1 {
		t.Fatalf("Len() = %d after the refused lease, want 1", got)
	}
}

// TestConcurrentFixedWindow runs goroutines against a few keys at one fixed
// instant: each key admits exactly its binding limit's rate, no more.
func TestConcurrentFixedWindow(t *testing.T) {
	window := limit.Limit{Algorithm: limit.FixedWindow, Rate: 1000, Period: time.Hour}
	tests := []struct {
		name   string
		limits []limit.Limit
		cost   int64
		want   int64 // units admitted per key
	}{
		{"one limit", []limit.Limit{window}, 1, 1000},
		{"binding bucket", []limit.Limit{window, limit.PerHour(700)}, 1, 700},
		{"cost 3", []limit.Limit{limit.PerHour(700), window}, 3, 699},
	}
	const goroutines, requests = 8, 600
	keys := []string{"a", "b", "c"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLimiter(t, Config{Shards: 2}, newClock(t0))
			var admitted [3]atomic.Int64
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Go(func() {
					for i := range requests {
						k := (g + i) % len(keys)
						d, err := l.AllowN(keys[k], tt.cost, tt.limits...)
						if err != nil {
							t.Errorf("AllowN() error = %v", err)
							return
						}
						if d.Allowed {
							admitted[k].Add(tt.cost)
						}
					}
				})
			}
			wg.Wait()
			for k := range keys {
				if got := admitted[k].Load(); got != tt.want {
					t.Errorf("key %q: %d units admitted, want %d", keys[k], got, tt.want)
				}
			}
		})
	}
}

// TestConcurrentChurn mixes decisions, leases, inserts, evictions and sweeps
// from several goroutines on a small Limiter; the race detector checks the
// locking and Len the cap.
func TestConcurrentChurn(t *testing.T) {
	clk := newClock(t0)
	l := newLimiter(t, Config{MaxKeys: 256, Shards: 4}, clk)
	limits := []limit.Limit{limit.PerSecond(5), {Algorithm: limit.SlidingWindowLog, Rate: 20, Period: time.Second}}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				key := strconv.Itoa((g*7919 + i) % 1000)
				switch i % 5 {
				case 0:
					l.Lease(key, 3, limits...)
					l.GiveBack(key, clk.now(), 1, limits...)
				case 1:
					clk.add(time.Millisecond)
				default:
					if _, err := l.AllowN(key, 1, limits[:1+i%2]...); err != nil {
						t.Errorf("AllowN() error = %v", err)
						return
					}
				}
				if i%500 == 0 {
					l.Sweep()
				}
			}
		})
	}
	wg.Wait()
	if got := l.Len(); got > 256 {
		t.Fatalf("Len() = %d, want <= MaxKeys 256", got)
	}
}

func TestMaxKeysCap(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		n    int // limits per key
	}{
		{"default shards", Config{MaxKeys: 1000}, 1},
		{"one shard", Config{MaxKeys: 100, Shards: 1}, 1},
		{"two limits per key", Config{MaxKeys: 1000}, 2},
		{"tiny", Config{MaxKeys: 3}, 3},
	}
	all := []limit.Limit{limit.PerHour(10), limit.PerMinute(5), {Algorithm: limit.FixedWindow, Rate: 10, Period: time.Hour}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock(t0)
			l := newLimiter(t, tt.cfg, clk)
			max := l.Config().MaxKeys
			for i := range 10 * max {
				clk.add(time.Microsecond) // distinct last uses; nothing expires
				mustAllow(t, l, "flood:"+strconv.Itoa(i), 1, all[:tt.n]...)
				if i%97 == 0 {
					if got := l.Len(); got > max {
						t.Fatalf("after %d keys: Len() = %d, want <= MaxKeys %d", i+1, got, max)
					}
				}
			}
			if got := l.Len(); got > max || got < max/2 {
				t.Fatalf("Len() = %d, want between %d and MaxKeys %d", got, max/2, max)
			}
		})
	}
}

// TestEvictionKeepsHotKey floods a full Limiter with new keys while one key
// is used between each: sampled LRU eviction never picks it, so its state
// (an exhausted bucket) survives.
func TestEvictionKeepsHotKey(t *testing.T) {
	clk := newClock(t0)
	l := newLimiter(t, Config{MaxKeys: 64, Shards: 1}, clk)
	hot := limit.PerHour(1)
	mustAllow(t, l, "hot", 1, hot)
	for i := range 1000 {
		clk.add(time.Microsecond)
		mustAllow(t, l, "cold:"+strconv.Itoa(i), 1, hot)
		if d := mustAllow(t, l, "hot", 1, hot); d.Allowed {
			t.Fatalf("after %d cold keys: AllowN(hot) = %+v, want denied (its state was evicted)", i+1, d)
		}
	}
}

// TestEvictionForgetsState documents the cost of the cap: an evicted key
// looks fresh.
func TestEvictionForgetsState(t *testing.T) {
	clk := newClock(t0)
	l := newLimiter(t, Config{MaxKeys: 1}, clk)
	lim := limit.PerHour(1)
	mustAllow(t, l, "a", 1, lim)
	mustAllow(t, l, "b", 1, lim) // evicts a
	if d := mustAllow(t, l, "a", 1, lim); !d.Allowed {
		t.Fatalf("AllowN(a) after eviction = %+v, want allowed (a looks fresh)", d)
	}
}

// TestEvictionSparesRequestEntries is the regression test for an eviction
// that would take an entry of the very request making room: key k's expired
// per-second entry is the oldest, but k is deciding it.
func TestEvictionSparesRequestEntries(t *testing.T) {
	clk := newClock(t0)
	l := newLimiter(t, Config{MaxKeys: 4}, clk)
	perSecond, perHour := limit.PerSecond(10), limit.PerHour(10)
	mustAllow(t, l, "k", 10, perSecond)
	clk.add(10 * time.Second) // k's entry has expired; the others will not
	for _, key := range []string{"x", "y", "z"} {
		mustAllow(t, l, key, 1, perHour)
	}
	mustAllow(t, l, "k", 10, perSecond, perHour) // full: evicts x, y or z
	if d := mustAllow(t, l, "k", 1, perSecond); d.Allowed {
		t.Fatalf("AllowN(k) = %+v, want denied: the 10 units charged to k were lost", d)
	}
	if got := l.Len(); got != 4 {
		t.Fatalf("Len() = %d, want 4", got)
	}
}

func TestIdleExpiry(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name  string
		lim   limit.Limit
		at    time.Duration // of the charge
		cost  int64
		until time.Duration // when the entry expires
	}{
		{"TokenBucket", limit.PerSecond(10), 0, 3, 300 * ms},
		{"TokenBucket/fraction", limit.Limit{Rate: 3, Period: time.Second}, 0, 1, 333334 * time.Microsecond},
		{"LeakyBucket", limit.Limit{Algorithm: limit.LeakyBucket, Rate: 2, Period: time.Second, Burst: 4}, 250 * ms, 3, 1750 * ms},
		{"FixedWindow", limit.Limit{Algorithm: limit.FixedWindow, Rate: 10, Period: time.Second}, 250 * ms, 1, time.Second},
		{"SlidingWindowCounter", limit.Limit{Algorithm: limit.SlidingWindowCounter, Rate: 10, Period: time.Second}, 250 * ms, 1, 2 * time.Second},
		{"SlidingWindowLog", limit.Limit{Algorithm: limit.SlidingWindowLog, Rate: 10, Period: time.Second}, 250 * ms, 2, 1250 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock(t0.Add(tt.at))
			l := newLimiter(t, Config{}, clk)
			mustAllow(t, l, "k", tt.cost, tt.lim)
			clk.set(t0.Add(tt.until - time.Microsecond))
			l.Sweep()
			if got := l.Len(); got != 1 {
				t.Fatalf("Len() = %d 1µs before the state expires, want 1", got)
			}
			clk.set(t0.Add(tt.until))
			l.Sweep()
			if got := l.Len(); got != 0 {
				t.Fatalf("Len() = %d once the state expired, want 0", got)
			}
		})
	}
}

// TestIncrementalCleanup checks that inserts drop retired entries without
// Sweep, and keep entries that expired only recently.
func TestIncrementalCleanup(t *testing.T) {
	clk := newClock(t0)
	l := newLimiter(t, Config{MaxKeys: 100_000, Shards: 1}, clk)
	lim := limit.PerSecond(10)
	for i := range 1000 {
		mustAllow(t, l, "old:"+strconv.Itoa(i), 1, lim)
	}
	clk.add(30 * time.Second) // expired, not yet retired: kept
	for i := range 1000 {
		mustAllow(t, l, "mid:"+strconv.Itoa(i), 1, lim)
	}
	if got := l.Len(); got != 2000 {
		t.Fatalf("Len() = %d, want 2000: entries expired less than a minute ago are kept", got)
	}
	clk.add(2 * time.Minute) // all retired
	for i := range 3000 {
		mustAllow(t, l, "new:"+strconv.Itoa(i), 1, lim)
	}
	// Each insert drops the retired among two sampled entries: nearly all
	// of the 2000 old ones are gone after 3000 inserts.
	got := l.Len()
	t.Logf("Len() = %d after 3000 inserts over 2000 retired entries", got)
	if got > 3200 {
		t.Fatalf("Len() = %d after 3000 inserts, want at most 3200", got)
	}
	clk.add(2 * time.Minute)
	mustAllow(t, l, "survivor", 1, limit.PerHour(10))
	l.Sweep()
	if got := l.Len(); got != 1 {
		t.Fatalf("Len() = %d after Sweep, want 1", got)
	}
	if sh := &l.shards[0]; sh.peak != 1 {
		t.Fatalf("shard peak = %d after Sweep, want 1 (map rebuilt)", sh.peak)
	}
	if d := mustAllow(t, l, "survivor", 1, limit.PerHour(10)); d.Remaining != 8 {
		t.Fatalf("AllowN(survivor) after the rebuild: Remaining = %d, want 8", d.Remaining)
	}
}

// TestOneKeyManyEntries drops entries from the start, middle and end of one
// key's entries while the others keep their state.
func TestOneKeyManyEntries(t *testing.T) {
	hour, minute, second, day := limit.PerHour(10), limit.PerMinute(10), limit.PerSecond(10), limit.Limit{Rate: 10, Period: 24 * time.Hour}
	tests := []struct {
		name    string
		order   []limit.Limit
		advance time.Duration
		keep    []limit.Limit
	}{
		{"middle", []limit.Limit{hour, second, day}, 2 * time.Second, []limit.Limit{hour, day}},
		{"first", []limit.Limit{second, hour, day}, 2 * time.Second, []limit.Limit{hour, day}},
		{"last", []limit.Limit{hour, day, second}, 2 * time.Second, []limit.Limit{hour, day}},
		{"first two", []limit.Limit{second, minute, hour}, 2 * time.Minute, []limit.Limit{hour}},
		{"all", []limit.Limit{second, minute}, 2 * time.Minute, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock(t0)
			l := newLimiter(t, Config{}, clk)
			for _, lim := range tt.order {
				mustAllow(t, l, "k", 4, lim)
			}
			clk.add(tt.advance)
			l.Sweep()
			if got := l.Len(); got != len(tt.keep) {
				t.Fatalf("Len() = %d after Sweep, want %d", got, len(tt.keep))
			}
			for _, lim := range tt.keep {
				if d := mustAllow(t, l, "k", 1, lim); d.Remaining != 5 {
					t.Fatalf("AllowN(%v) after Sweep: Remaining = %d, want 5 (state kept)", lim, d.Remaining)
				}
			}
			if d := mustAllow(t, l, "k", 1, tt.order...); !d.Allowed {
				t.Fatalf("AllowN(all) = %+v, want allowed", d)
			}
		})
	}
}

// TestManyLimits decides more distinct limits than fit on the stack.
func TestManyLimits(t *testing.T) {
	l := newLimiter(t, Config{}, newClock(t0))
	limits := make([]limit.Limit, maxLimits+4)
	for i := range limits {
		limits[i] = limit.Limit{Rate: int64(10 + i), Period: time.Minute}
	}
	for i := range 10 {
		d, b, err := l.AllowAt("k", t0, 1, limits...)
		if err != nil || !d.Allowed || b != 0 || d.Remaining != int64(9-i) {
			t.Fatalf("%d: AllowAt() = %+v, %d, %v, want allowed, binding 0, Remaining %d", i, d, b, err, 9-i)
		}
	}
	if d, b, _ := l.AllowAt("k", t0, 1, limits...); d.Allowed || b != 0 {
		t.Fatalf("AllowAt() = %+v, binding %d, want denied by limit 0", d, b)
	}
	if got := l.Len(); got != len(limits) {
		t.Fatalf("Len() = %d, want %d", got, len(limits))
	}
}

func TestLease(t *testing.T) {
	clk := newClock(t0)
	l := newLimiter(t, Config{}, clk)
	perSecond := limit.PerSecond(10)
	window := limit.Limit{Algorithm: limit.FixedWindow, Rate: 25, Period: time.Minute}
	steps := []struct {
		want, granted, remaining int64
	}{
		{4, 4, 6},
		{20, 6, 0}, // the bucket binds
		{1, 0, 0},  // exhausted: nothing charged
	}
	for i, st := range steps {
		g, d, err := l.Lease("k", st.want, perSecond, window)
		if err != nil || g != st.granted || d.Remaining != st.remaining {
			t.Fatalf("step %d: Lease(%d) = %d, %+v, %v, want %d granted, Remaining %d", i, st.want, g, d, err, st.granted, st.remaining)
		}
	}
	clk.add(500 * time.Millisecond) // 5 back in the bucket; 15 left in the window
	l.GiveBack("k", t0, 7, perSecond, window)
	if d := mustAllow(t, l, "k", 1, window); d.Remaining != 21 {
		t.Fatalf("window after GiveBack(7): Remaining = %d, want 21", d.Remaining)
	}
	if d := mustAllow(t, l, "k", 1, perSecond); d.Remaining != 9 {
		t.Fatalf("bucket after GiveBack(7): Remaining = %d, want 9 (capped at capacity)", d.Remaining)
	}
	l.GiveBack("k", t0, 100, window, window) // a limit twice: ignored
	l.GiveBack("k", t0, 100, window)         // the window empties, never below
	if d := mustAllow(t, l, "k", 1, window); d.Remaining != 24 {
		t.Fatalf("window after GiveBack(100): Remaining = %d, want 24", d.Remaining)
	}
	l.GiveBack("unknown", t0, 5, perSecond) // nothing kept: ignored
	l.GiveBack("", t0, 5, perSecond)
	if got := l.Len(); got != 2 {
		t.Fatalf("Len() = %d, want 2", got)
	}
}

// TestZeroAllocs checks that deciding for a key already present allocates
// nothing, with one and with several limits, and for leases.
func TestZeroAllocs(t *testing.T) {
	l := newLimiter(t, Config{}, newClock(t0))
	one := []limit.Limit{limit.PerSecond(1e9)}
	two := []limit.Limit{limit.PerSecond(1e9), limit.PerHour(1e12)}
	five := []limit.Limit{limit.PerSecond(1e9), limit.PerMinute(1e9), limit.PerHour(1e12),
		{Algorithm: limit.FixedWindow, Rate: 1e12, Period: time.Hour},
		{Algorithm: limit.SlidingWindowCounter, Rate: 1e12, Period: time.Hour}}
	tests := []struct {
		name string
		f    func()
	}{
		{"Allow/1", func() { l.Allow("k", one...) }},
		{"Allow/1 limit literal", func() { l.Allow("k", limit.PerSecond(1e9)) }},
		{"AllowN/2", func() { l.AllowN("k", 2, two...) }},
		{"AllowN/5", func() { l.AllowN("k", 1, five...) }},
		{"AllowAt/2", func() { l.AllowAt("k", t0, 1, two...) }},
		{"Lease/2", func() { l.Lease("k", 2, two...) }},
		{"GiveBack/2", func() { l.GiveBack("k", t0, 1, two...) }},
		{"Allow/denied", func() { l.Allow("k", limit.PerHour(1)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.f() // insert
			if got := testing.AllocsPerRun(100, tt.f); got != 0 {
				t.Fatalf("AllocsPerRun(%s) = %v, want 0", tt.name, got)
			}
		})
	}
}
