package hybrid

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/hybridlimit/hybridlimit/remote"
)

// newMini returns a Limiter over n miniredis nodes.
func newMini(t testing.TB, n int, cfg Config) (*Limiter, []*miniredis.Miniredis) {
	t.Helper()
	var ms []*miniredis.Miniredis
	for i := 0; i < n; i++ {
		m := miniredis.RunT(t)
		ms = append(ms, m)
		cfg.Addrs = append(cfg.Addrs, m.Addr())
	}
	if cfg.Timeout == 0 {
		// These tests count decisions by Source: a busy CI machine must
		// not push a call past the 50 ms default into the fallback.
		cfg.Timeout = 2 * time.Second
	}
	lim, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lim.Close() })
	return lim, ms
}

func TestAllowAndAllowN(t *testing.T) {
	lim, _ := newMini(t, 3, Config{})
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		r, err := lim.Allow(ctx, "user:42", PerMinute(5))
		if err != nil || !r.Allowed || r.Remaining != int64(4-i) || r.Source != SourceRemote {
			t.Fatalf("Allow #%d = %+v, %v; want allowed, %d remaining, from Redis", i, r, err, 4-i)
		}
	}
	r, err := lim.Allow(ctx, "user:42", PerMinute(5))
	if err != nil || r.Allowed || r.RetryAfter <= 0 || r.Limit != PerMinute(5) {
		t.Fatalf("Allow #6 = %+v, %v; want denied with RetryAfter", r, err)
	}
	// Two limits: the hour binds when the minute has room.
	r, err = lim.AllowN(ctx, "user:7", 3, PerMinute(100), PerHour(4))
	if err != nil || !r.Allowed || r.Limit != PerHour(4) || r.Remaining != 1 {
		t.Fatalf("AllowN(3) = %+v, %v; want allowed, bound by the hour with 1 remaining", r, err)
	}
	r, err = lim.AllowN(ctx, "user:7", 2, PerMinute(100), PerHour(4))
	if err != nil || r.Allowed || r.Limit != PerHour(4) {
		t.Fatalf("AllowN(2) = %+v, %v; want denied by the hour", r, err)
	}
	// The minute was not charged by the denial: 97 left.
	r, err = lim.AllowN(ctx, "user:7", 1, PerMinute(100))
	if err != nil || r.Remaining != 96 {
		t.Fatalf("AllowN(1, minute) = %+v, %v; want 96 remaining", r, err)
	}
}

func TestBadInputConsumesNothing(t *testing.T) {
	lim, ms := newMini(t, 2, Config{})
	ctx := context.Background()
	tests := []struct {
		name   string
		key    string
		n      int64
		limits []Limit
		want   error
	}{
		{"empty key", "", 1, []Limit{PerSecond(1)}, ErrInvalidKey},
		{"long key", strings.Repeat("x", MaxKeyLen+1), 1, []Limit{PerSecond(1)}, ErrInvalidKey},
		{"no limit", "k", 1, nil, ErrInvalidLimit},
		{"zero rate", "k", 1, []Limit{{Rate: 0, Period: time.Second}}, ErrInvalidLimit},
		{"zero period", "k", 1, []Limit{{Rate: 1}}, ErrInvalidLimit},
		{"negative period", "k", 1, []Limit{{Rate: 1, Period: -time.Second}}, ErrInvalidLimit},
		{"unknown algorithm", "k", 1, []Limit{{Algorithm: 42, Rate: 1, Period: time.Second}}, ErrInvalidLimit},
		{"zero cost", "k", 0, []Limit{PerSecond(1)}, ErrInvalidCost},
		{"negative cost", "k", -5, []Limit{PerSecond(1)}, ErrInvalidCost},
		{"cost above capacity", "k", 11, []Limit{PerMinute(100), PerSecond(10)}, ErrCostExceedsLimit},
		{"limit twice", "k", 1, []Limit{PerSecond(10), PerSecond(10)}, ErrInvalidLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := lim.AllowN(ctx, tt.key, tt.n, tt.limits...); !errors.Is(err, tt.want) {
				t.Errorf("AllowN = %v, want %v", err, tt.want)
			}
			if err := lim.WaitN(ctx, tt.key, tt.n, tt.limits...); !errors.Is(err, tt.want) {
				t.Errorf("WaitN = %v, want %v", err, tt.want)
			}
		})
	}
	for _, m := range ms {
		if keys := m.Keys(); len(keys) != 0 {
			t.Errorf("keys after bad input: %v", keys)
		}
	}
	if st := lim.Stats(); st.Decisions[SourceRemote]+st.Decisions[SourceFallback] != 0 {
		t.Errorf("bad input counted as decisions: %v", st.Decisions)
	}
}

func TestConfigErrors(t *testing.T) {
	m := miniredis.RunT(t)
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no nodes", Config{}},
		{"negative timeout", Config{Addrs: []string{m.Addr()}, Timeout: -1}},
		{"share above 1", Config{Addrs: []string{m.Addr()}, FallbackShare: 1.5}},
		{"negative share", Config{Addrs: []string{m.Addr()}, FallbackShare: -0.5}},
		{"unknown mode", Config{Addrs: []string{m.Addr()}, OnFailure: 9}},
		{"duplicate address", Config{Addrs: []string{m.Addr(), m.Addr()}}},
		{"nil client", Config{Nodes: []Node{{Name: "a"}}}},
		{"empty name", Config{Nodes: []Node{{Client: redis.NewClient(&redis.Options{Addr: m.Addr()})}}}},
		{"negative open timeout", Config{Addrs: []string{m.Addr()}, Breaker: BreakerConfig{OpenTimeout: -time.Second}}},
		{"layout keys without compact", Config{Addrs: []string{m.Addr()}, Layout: Layout{Keys: 1000}}},
		{"negative layout keys", Config{Addrs: []string{m.Addr()}, Layout: Layout{Compact: true, Keys: -1}}},
		{"layout keys above the maximum", Config{Addrs: []string{m.Addr()}, Layout: Layout{Compact: true, Keys: remote.MaxLayoutKeys + 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lim, err := New(tt.cfg)
			if err == nil {
				lim.Close()
				t.Fatalf("New(%s) succeeded", tt.name)
			}
		})
	}
	for _, tt := range tests {
		for _, n := range tt.cfg.Nodes {
			if n.Client != nil {
				n.Client.Close()
			}
		}
	}
}

func TestCloseIsIdempotentAndFinal(t *testing.T) {
	lim, _ := newMini(t, 2, Config{})
	ctx := context.Background()
	if err := lim.Close(); err != nil {
		t.Fatal(err)
	}
	if err := lim.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if _, err := lim.Allow(ctx, "k", PerSecond(1)); !errors.Is(err, ErrClosed) {
		t.Errorf("Allow after Close = %v, want ErrClosed", err)
	}
	if err := lim.Wait(ctx, "k", PerSecond(1)); !errors.Is(err, ErrClosed) {
		t.Errorf("Wait after Close = %v, want ErrClosed", err)
	}
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	if err := lim.AddNode(Node{Name: "x", Client: c}); !errors.Is(err, ErrClosed) {
		t.Errorf("AddNode after Close = %v, want ErrClosed", err)
	}
	if err := lim.RemoveNode("x"); !errors.Is(err, ErrClosed) {
		t.Errorf("RemoveNode after Close = %v, want ErrClosed", err)
	}
}

func TestWaitDeadline(t *testing.T) {
	lim, _ := newMini(t, 1, Config{})
	ctx := context.Background()
	l := PerMinute(1)
	if err := lim.Wait(ctx, "k", l); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := lim.Wait(cctx, "k", l)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait past the deadline = %v, want DeadlineExceeded", err)
	}
	// It must not sleep toward the minute it would need (generous bound:
	// the machine may be busy).
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("Wait took %v to see the deadline could not be met; want at once", el)
	}
}

func TestWaitSleepsRetryAfter(t *testing.T) {
	lim, _ := newMini(t, 1, Config{})
	ctx := context.Background()
	l := Limit{Rate: 20, Period: time.Second, Burst: 1} // one every 50ms
	start := time.Now()
	for i := 0; i < 4; i++ {
		if err := lim.Wait(ctx, "k", l); err != nil {
			t.Fatal(err)
		}
	}
	if el := time.Since(start); el < 140*time.Millisecond {
		t.Errorf("4 Waits on 1 per 50ms took %v, want at least 150ms less slack", el)
	}
}

func TestWaitCancelled(t *testing.T) {
	lim, _ := newMini(t, 1, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	l := PerHour(1)
	if err := lim.Wait(ctx, "k", l); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(20*time.Millisecond, cancel)
	if err := lim.Wait(ctx, "k", l); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait cancelled = %v, want Canceled", err)
	}
}

func TestFallbackShare(t *testing.T) {
	// A node that does not exist: every request falls back.
	lim, err := New(Config{Addrs: []string{"127.0.0.1:1"}, FallbackShare: 0.5, Timeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer lim.Close()
	ctx := context.Background()
	allowed := 0
	for i := 0; i < 20; i++ {
		r, err := lim.Allow(ctx, "k", PerHour(10))
		if err != nil {
			t.Fatal(err)
		}
		if r.Source != SourceFallback || r.Limit != PerHour(10) {
			t.Fatalf("Allow = %+v, want SourceFallback reporting the caller's limit", r)
		}
		if r.Allowed {
			allowed++
		}
	}
	if allowed != 5 {
		t.Errorf("admitted %d of 20 under PerHour(10) × 0.5, want 5", allowed)
	}
	st := lim.Stats()
	if st.Decisions[SourceFallback] != 20 || len(st.Nodes) != 1 || st.Nodes[0].Breaker != "open" {
		t.Errorf("Stats = %+v, want 20 fallbacks and an open breaker", st)
	}
}

func TestStats(t *testing.T) {
	lim, _ := newMini(t, 3, Config{})
	ctx := context.Background()
	for i := 0; i < 30; i++ {
		if _, err := lim.Allow(ctx, string(rune('a'+i%26))+"key", PerSecond(100)); err != nil {
			t.Fatal(err)
		}
	}
	st := lim.Stats()
	var calls int64
	for _, n := range st.Nodes {
		calls += n.Calls
		if n.Breaker != "closed" || n.Errors != 0 {
			t.Errorf("node %+v, want closed breaker, no errors", n)
		}
	}
	if calls != 30 || st.Decisions[SourceRemote] != 30 || len(st.Nodes) != 3 {
		t.Errorf("Stats = %+v, want 30 remote calls over 3 nodes", st)
	}
	for _, n := range st.Nodes {
		if n.Pool <= 0 || n.MaxInFlight < 1 || n.MaxInFlight > n.Pool || n.InFlight != 0 {
			t.Errorf("node %s: pool %d, max in flight %d, in flight %d; want 1 <= max <= pool, none in flight", n.Name, n.Pool, n.MaxInFlight, n.InFlight)
		}
		if n.Degraded || n.Latency.Count != n.Calls || n.Latency.Sum <= 0 || len(n.Latency.Counts) != len(n.Latency.Bounds)+1 {
			t.Errorf("node %s: degraded %v, latency %+v for %d calls", n.Name, n.Degraded, n.Latency, n.Calls)
		}
	}
	// Denials are counted by Source as well.
	for i := 0; i < 3; i++ {
		lim.Allow(ctx, "denied", PerSecond(1))
	}
	st = lim.Stats()
	if st.Denied[SourceRemote]+st.Denied[SourceDenyCache] != 2 || st.Decisions[SourceRemote]+st.Decisions[SourceDenyCache] != 33 {
		t.Errorf("after 1 allowed and 2 denied: decisions %v, denied %v", st.Decisions, st.Denied)
	}
}

// TestNodeOf: a key's state is on the node NodeOf names, and on no other;
// with no node, NodeOf is "".
func TestNodeOf(t *testing.T) {
	lim, ms := newMini(t, 3, Config{Lease: LeaseConfig{Disable: true}})
	byAddr := map[string]*miniredis.Miniredis{}
	for _, m := range ms {
		byAddr[m.Addr()] = m
	}
	owners := map[string]bool{}
	for i := range 30 {
		key := fmt.Sprintf("owner-%02d", i)
		if _, err := lim.Allow(context.Background(), key, PerMinute(10)); err != nil {
			t.Fatal(err)
		}
		owner := lim.NodeOf(key)
		owners[owner] = true
		for addr, m := range byAddr {
			held := slices.ContainsFunc(m.Keys(), func(k string) bool { return strings.Contains(k, key) })
			if held != (addr == owner) {
				t.Errorf("key %q: NodeOf = %q, but node %s holds its state: %v", key, owner, addr, held)
			}
		}
	}
	if len(owners) != 3 {
		t.Errorf("30 keys owned by %d nodes, want 3", len(owners))
	}
	for _, m := range ms {
		if err := lim.RemoveNode(m.Addr()); err != nil {
			t.Fatal(err)
		}
	}
	if got := lim.NodeOf("owner-00"); got != "" {
		t.Errorf("NodeOf with no node = %q, want \"\"", got)
	}
}

func TestAddRemoveNodeErrors(t *testing.T) {
	lim, ms := newMini(t, 2, Config{})
	c := redis.NewClient(&redis.Options{Addr: ms[0].Addr()})
	defer c.Close()
	if err := lim.AddNode(Node{Name: ms[0].Addr(), Client: c}); !errors.Is(err, ErrInvalidNode) {
		t.Errorf("AddNode(duplicate) = %v, want ErrInvalidNode", err)
	}
	if err := lim.AddNode(Node{Name: "", Client: c}); !errors.Is(err, ErrInvalidNode) {
		t.Errorf("AddNode(empty name) = %v, want ErrInvalidNode", err)
	}
	if err := lim.AddNode(Node{Name: "x"}); !errors.Is(err, ErrInvalidNode) {
		t.Errorf("AddNode(nil client) = %v, want ErrInvalidNode", err)
	}
	if err := lim.RemoveNode("nope"); !errors.Is(err, ErrUnknownNode) {
		t.Errorf("RemoveNode(unknown) = %v, want ErrUnknownNode", err)
	}
	// Remove every node: requests fall back, no error.
	for _, m := range ms {
		if err := lim.RemoveNode(m.Addr()); err != nil {
			t.Fatal(err)
		}
	}
	r, err := lim.Allow(context.Background(), "k", PerSecond(1))
	if err != nil || r.Source != SourceFallback {
		t.Errorf("Allow with no nodes = %+v, %v; want SourceFallback", r, err)
	}
}
