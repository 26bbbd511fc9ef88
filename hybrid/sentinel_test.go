package hybrid

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
	"github.com/hybridlimit/hybridlimit/remote"
)

// TestSentinelFailover: a Sentinel group (a master, a replica, three
// sentinels, down-after 1 s) behind a bounded failover client. The master
// is killed; the sentinels promote the replica, and the keys are decided
// by Redis again soon after, with no error reaching a caller. In both
// layouts. Bounded: 20 s each.
func TestSentinelFailover(t *testing.T) {
	for _, l := range []Layout{{}, {Compact: true}} {
		t.Run(fmt.Sprintf("compact=%v", l.Compact), func(t *testing.T) { sentinelFailover(t, l) })
	}
}

// sentinelLimit never denies the test's calls, and its state is a field
// in the compact layout (a million a second would keep a key of its own).
var sentinelLimit = PerMinute(100_000)

func sentinelFailover(t *testing.T, l Layout) {
	ctx := context.Background()
	master := redistest.Start(t)
	replica := redistest.Start(t, redistest.WithArgs("--replicaof", "127.0.0.1", strconv.Itoa(master.Port())))
	var sentinels []string
	for range 3 {
		s := redistest.Start(t, redistest.WithSentinel())
		c := s.Client(t)
		for _, cmd := range [][]any{
			{"SENTINEL", "MONITOR", "m", "127.0.0.1", master.Port(), 2},
			{"SENTINEL", "SET", "m", "down-after-milliseconds", 1000},
			{"SENTINEL", "SET", "m", "failover-timeout", 3000},
		} {
			if err := c.Do(ctx, cmd...).Err(); err != nil {
				t.Fatalf("%v: %v", cmd, err)
			}
		}
		sentinels = append(sentinels, s.Addr())
	}
	// The replica in sync and known to the sentinels.
	deadline := time.Now().Add(10 * time.Second)
	sc := redis.NewClient(&redis.Options{Addr: sentinels[0]})
	defer sc.Close()
	for {
		info, _ := replica.Client(t).Info(ctx, "replication").Result()
		known, _ := sc.Do(ctx, "SENTINEL", "REPLICAS", "m").Slice()
		if strings.Contains(info, "master_link_status:up") && len(known) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("replica not in sync, or not known to the sentinels, after 10 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	rdb := redis.NewFailoverClient(remote.BoundFailoverOptions(&redis.FailoverOptions{MasterName: "m", SentinelAddrs: sentinels}))
	t.Cleanup(func() { rdb.Close() })
	lim, err := New(Config{Nodes: []Node{{Name: "m", Client: rdb}}, Layout: l, Timeout: 100 * time.Millisecond, Lease: LeaseConfig{Disable: true},
		Breaker: BreakerConfig{OpenTimeout: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lim.Close() })
	if r, err := lim.Allow(ctx, "k", sentinelLimit); err != nil || r.Source != SourceRemote {
		t.Fatalf("before: %+v, %v", r, err)
	}
	killed := time.Now()
	if err := master.Kill(); err != nil {
		t.Fatal(err)
	}
	var promoted, back time.Time
	errs, fallback := 0, 0
	var slowest time.Duration
	for time.Since(killed) < 20*time.Second {
		if promoted.IsZero() {
			if info, err := replica.Client(t).Info(ctx, "replication").Result(); err == nil && strings.Contains(info, "role:master") {
				promoted = time.Now()
			}
		}
		start := time.Now()
		r, err := lim.Allow(ctx, "k", sentinelLimit)
		slowest = max(slowest, time.Since(start))
		switch {
		case err != nil:
			errs++
		case r.Source == SourceRemote && !promoted.IsZero():
			back = time.Now()
		case r.Source != SourceRemote:
			fallback++
		}
		if !back.IsZero() {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("promoted %v after the kill; back with Redis %v after the promotion; %d fallback answers, %d errors; slowest call %v",
		promoted.Sub(killed), back.Sub(promoted), fallback, errs, slowest)
	if errs != 0 {
		t.Errorf("%d errors reached callers", errs)
	}
	if promoted.IsZero() || back.IsZero() {
		t.Fatalf("no recovery in 20 s (promoted %v, back %v)", !promoted.IsZero(), !back.IsZero())
	}
	if d := back.Sub(promoted); d > 2*time.Second {
		t.Errorf("back with Redis %v after the promotion, want <= 2s", d)
	}
}
