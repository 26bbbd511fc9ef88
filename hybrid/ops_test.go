package hybrid

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
)

// awayFromMinuteBoundary waits, when the next whole minute is near, until
// it has passed: the windowed algorithms below count in minute windows,
// and a window ending mid-test would refill them.
func awayFromMinuteBoundary(t *testing.T, need time.Duration) {
	t.Helper()
	if left := time.Until(time.Now().Truncate(time.Minute).Add(time.Minute)); left < need {
		time.Sleep(left + 100*time.Millisecond)
	}
}

// TestOperations: Peek, AllowAtMost, Refund and Reset on real redis-server,
// for every algorithm with three limits at once (one named), across two
// Limiters sharing the nodes, so that every answer is Redis's.
func TestOperations(t *testing.T) {
	srv := redistest.StartN(t, 2)
	addrs := []string{srv[0].Addr(), srv[1].Addr()}
	cfg := Config{Addrs: addrs, Timeout: 2 * time.Second, Lease: LeaseConfig{Disable: true}, DenyCache: DenyCacheConfig{Disable: true}}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	ctx := context.Background()
	for _, alg := range []Algorithm{TokenBucket, LeakyBucket, FixedWindow, SlidingWindowLog, SlidingWindowCounter} {
		t.Run(alg.String(), func(t *testing.T) {
			awayFromMinuteBoundary(t, 5*time.Second)
			key := "ops:" + alg.String()
			limits := []Limit{{Algorithm: alg, Rate: 5, Period: time.Minute}, {Algorithm: alg, Rate: 50, Period: time.Hour}, {Rate: 100, Period: time.Hour, Name: "n"}}
			want := func(what string, r Result, err error, allowed bool, granted, remaining int64) {
				t.Helper()
				if err != nil || r.Allowed != allowed || r.Granted != granted || r.Source != SourceRemote || (allowed && r.Remaining != remaining) ||
					(!allowed && r.RetryAfter <= 0) || r.Binding != 0 || r.Limit != limits[0] {
					t.Fatalf("%s = %+v, %v; want allowed %v, granted %d, remaining %d, binding 0, from Redis", what, r, err, allowed, granted, remaining)
				}
			}
			r, err := a.Peek(ctx, key, limits...)
			want("Peek, fresh", r, err, true, 0, 4)
			r, err = b.Peek(ctx, key, limits...)
			want("Peek again: nothing consumed", r, err, true, 0, 4)
			r, err = a.AllowAtMost(ctx, key, 3, limits...)
			want("AllowAtMost(3)", r, err, true, 3, 2)
			r, err = b.Peek(ctx, key, limits...)
			want("Peek on the other Limiter", r, err, true, 0, 1)
			r, err = b.AllowAtMost(ctx, key, 10, limits...)
			want("AllowAtMost(10) with 2 left", r, err, true, 2, 0)
			r, err = a.AllowAtMost(ctx, key, 1, limits...)
			want("AllowAtMost(1) with none left", r, err, false, 0, 0)
			r, err = a.Peek(ctx, key, limits...)
			want("Peek with none left", r, err, false, 0, 0)
			if err := b.Refund(ctx, key, 2, limits...); err != nil {
				t.Fatal(err)
			}
			r, err = a.Peek(ctx, key, limits...)
			want("Peek after Refund(2)", r, err, true, 0, 1)
			r, err = a.AllowN(ctx, key, 2, limits...)
			want("AllowN(2) after Refund(2)", r, err, true, 2, 0)
			r, err = b.AllowN(ctx, key, 1, limits...)
			want("AllowN(1) after that", r, err, false, 0, 0)
			if err := a.Refund(ctx, key, 1000, limits...); err != nil {
				t.Fatal(err)
			}
			r, err = a.AllowAtMost(ctx, key, 1000, limits...)
			want("AllowAtMost(1000) after Refund(1000): never above capacity", r, err, true, 5, 0)
			if err := b.Reset(ctx, key, limits...); err != nil {
				t.Fatal(err)
			}
			for _, s := range srv {
				if keys, err := s.Client(t).Keys(ctx, "*"+key+"*").Result(); err != nil || len(keys) != 0 {
					t.Fatalf("keys after Reset: %v, %v", keys, err)
				}
			}
			r, err = a.AllowAtMost(ctx, key, 1000, limits...)
			want("AllowAtMost(1000) after Reset", r, err, true, 5, 0)
		})
	}
}

// TestOperationsBadInput: the four operations refuse what AllowN refuses
// (and a refund or AllowAtMost of less than one unit), consuming nothing.
func TestOperationsBadInput(t *testing.T) {
	lim, ms := newMini(t, 2, Config{})
	ctx := context.Background()
	ok := []Limit{PerSecond(10)}
	tests := []struct {
		name   string
		key    string
		n      int64
		limits []Limit
		want   error
	}{
		{"empty key", "", 1, ok, ErrInvalidKey},
		{"long key", strings.Repeat("x", MaxKeyLen+1), 1, ok, ErrInvalidKey},
		{"no limit", "k", 1, nil, ErrInvalidLimit},
		{"zero rate", "k", 1, []Limit{{Rate: 0, Period: time.Second}}, ErrInvalidLimit},
		{"unknown algorithm", "k", 1, []Limit{{Algorithm: 42, Rate: 1, Period: time.Second}}, ErrInvalidLimit},
		{"limit twice", "k", 1, []Limit{PerSecond(10), PerSecond(10)}, ErrInvalidLimit},
		{"too many limits", "k", 1, make([]Limit, MaxLimits+1), ErrInvalidLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := lim.Peek(ctx, tt.key, tt.limits...); !errors.Is(err, tt.want) {
				t.Errorf("Peek = %v, want %v", err, tt.want)
			}
			if _, err := lim.AllowAtMost(ctx, tt.key, tt.n, tt.limits...); !errors.Is(err, tt.want) {
				t.Errorf("AllowAtMost = %v, want %v", err, tt.want)
			}
			if err := lim.Refund(ctx, tt.key, tt.n, tt.limits...); !errors.Is(err, tt.want) {
				t.Errorf("Refund = %v, want %v", err, tt.want)
			}
			if err := lim.Reset(ctx, tt.key, tt.limits...); !errors.Is(err, tt.want) {
				t.Errorf("Reset = %v, want %v", err, tt.want)
			}
		})
	}
	for _, n := range []int64{0, -1} {
		if _, err := lim.AllowAtMost(ctx, "k", n, ok...); !errors.Is(err, ErrInvalidCost) {
			t.Errorf("AllowAtMost(%d) = %v, want ErrInvalidCost", n, err)
		}
		if err := lim.Refund(ctx, "k", n, ok...); !errors.Is(err, ErrInvalidCost) {
			t.Errorf("Refund(%d) = %v, want ErrInvalidCost", n, err)
		}
	}
	// More than a capacity is not bad input for AllowAtMost: it grants the
	// capacity.
	if r, err := lim.AllowAtMost(ctx, "big", 1000, ok...); err != nil || r.Granted != 10 {
		t.Errorf("AllowAtMost(1000) of 10/s = %+v, %v; want 10 granted", r, err)
	}
	for _, m := range ms {
		for _, k := range m.Keys() {
			if !strings.Contains(k, "{big}") {
				t.Errorf("key after bad input: %s", k)
			}
		}
	}
	lim.Close()
	if _, err := lim.Peek(ctx, "k", ok...); !errors.Is(err, ErrClosed) {
		t.Errorf("Peek after Close = %v", err)
	}
	if _, err := lim.AllowAtMost(ctx, "k", 1, ok...); !errors.Is(err, ErrClosed) {
		t.Errorf("AllowAtMost after Close = %v", err)
	}
	if err := lim.Refund(ctx, "k", 1, ok...); !errors.Is(err, ErrClosed) {
		t.Errorf("Refund after Close = %v", err)
	}
	if err := lim.Reset(ctx, "k", ok...); !errors.Is(err, ErrClosed) {
		t.Errorf("Reset after Close = %v", err)
	}
}

// TestOperationsFailureMode: with the node gone, the four operations are
// answered by the fallback buckets, as AllowN is, and no error reaches the
// caller.
func TestOperationsFailureMode(t *testing.T) {
	lim, ms := newMini(t, 1, Config{Timeout: 100 * time.Millisecond})
	ms[0].Close()
	ctx := context.Background()
	l := PerMinute(5)
	r, err := lim.Peek(ctx, "k", l)
	if err != nil || !r.Allowed || r.Source != SourceFallback || r.Remaining != 4 {
		t.Fatalf("Peek = %+v, %v; want allowed by the fallback, 4 remaining", r, err)
	}
	r, err = lim.AllowAtMost(ctx, "k", 3, l)
	if err != nil || r.Granted != 3 || r.Source != SourceFallback || r.Remaining != 2 {
		t.Fatalf("AllowAtMost(3) = %+v, %v; want 3 granted by the fallback", r, err)
	}
	if err := lim.Refund(ctx, "k", 1, l); err != nil {
		t.Fatal(err)
	}
	if r, _ = lim.Peek(ctx, "k", l); r.Remaining != 2 {
		t.Fatalf("Peek after Refund(1) = %+v; want 2 remaining", r)
	}
	if err := lim.Reset(ctx, "k", l); err != nil {
		t.Fatal(err)
	}
	if r, _ = lim.AllowAtMost(ctx, "k", 100, l); r.Granted != 5 {
		t.Fatalf("AllowAtMost(100) after Reset = %+v; want the whole 5", r)
	}
}

// TestResetDropsTheLease: Reset ends this instance's lease for the key,
// and its units vanish with the state reset: nothing is given back to it
// afterwards (a give-back to a SlidingWindowLog removes its newest events,
// which would be those charged after the reset).
func TestResetDropsTheLease(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	a, err := New(Config{Addrs: []string{srv.Addr()}, Timeout: 2 * time.Second, Lease: LeaseConfig{HotRate: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	b, err := New(Config{Addrs: []string{srv.Addr()}, Timeout: 2 * time.Second, Lease: LeaseConfig{Disable: true}, DenyCache: DenyCacheConfig{Disable: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	l := Limit{Algorithm: SlidingWindowLog, Rate: 10_000, Period: time.Minute}
	leased := false
	for range 2000 {
		r, err := a.Allow(ctx, "k", l)
		if err != nil {
			t.Fatal(err)
		}
		leased = leased || r.Source == SourceLease
	}
	// The last spend may have left the lease dry, its renewal in flight:
	// wait for it (at most a second).
	for deadline := time.Now().Add(time.Second); a.Stats().LeaseUnits == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if !leased || a.Stats().LeaseUnits == 0 {
		t.Fatalf("no lease held before the Reset (stats %+v)", a.Stats())
	}
	if err := a.Reset(ctx, "k", l); err != nil {
		t.Fatal(err)
	}
	if n := a.Stats().LeaseUnits; n != 0 {
		t.Errorf("%d lease units held after Reset", n)
	}
	if r, err := b.Allow(ctx, "k", l); err != nil || !r.Allowed || r.Remaining != l.Rate-1 {
		t.Fatalf("first Allow after Reset = %+v, %v; want a fresh budget", r, err)
	}
	a.Close() // waits for its background work: nothing may be given back
	if r, err := b.Peek(ctx, "k", l); err != nil || r.Remaining != l.Rate-2 {
		t.Errorf("Peek after Reset and one Allow = %+v, %v; want %d remaining (the event charged after the Reset kept)", r, err, l.Rate-2)
	}
}
