package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hybridlimit/hybridlimit/hybrid"
	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
)

// TestLocateHotKeysCancelled: a fault run cancelled while it locates its
// hot keys is interrupted (TestCancelledMidway saw "bench cannot tell the
// victim's keys" instead: hybrid answers a cancelled call from the failure
// mode, so no node's calls move).
func TestLocateHotKeysCancelled(t *testing.T) {
	cl := miniCluster(t)
	h, err := newHybrid(cl, 1, 0.01, hybrid.Layout{}, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := h.close(); err != nil {
			t.Error(err)
		}
	}()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = locateHotKeys(ctx, cl, h, hotKeys(), []hybrid.Limit{{Rate: 1000, Period: time.Second}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("locateHotKeys(cancelled ctx) = %v, want an error wrapping %v", err, context.Canceled)
	}
}

// TestClusterNodes runs bench with -cluster -nodes on a Redis Cluster it
// did not start (3 masters, no replicas, started by the test), seeded by
// two of its masters and holding a user's keys: both systems decide on it
// with no errors and no failure mode, the user's keys stay, and none of
// bench's is left on any master. A seed that is not in cluster mode is an
// error naming it. Bounded: the cluster's start (about a second) and two
// runs of 150ms per system.
func TestClusterNodes(t *testing.T) {
	redisOnly(t)
	c := redistest.StartCluster(t, 3, 0)
	ctx := t.Context()
	cc := c.Masters[0].Client(t) // a plain client: user keys in its slots only
	user := []string{}
	for _, k := range []string{"user:keep", "rate:user:keep", "hlb:{user:keep}:tb:1:1s", "a", "b", "c"} {
		if c.MasterOf(t, k) == 0 {
			user = append(user, k)
			if err := cc.Set(ctx, k, "1", 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	nodes := "redis://" + c.Masters[0].Addr() + ",redis://" + c.Masters[2].Addr()
	for _, mode := range [][]string{{"-workload", "hot"}, {"-workload", "zipf", "-keys", "1000"}} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"-cluster", "-nodes", nodes, "-duration", "150ms", "-concurrency", "4", "-instances", "2", "-json"}, mode...)
		if err := run(ctx, args, &stdout, &stderr); err != nil {
			t.Fatalf("run(%q) = %v, stderr:\n%s", args, err, stderr.String())
		}
		if want := "nodes: a Redis Cluster (redis-server "; !strings.HasPrefix(stderr.String(), want) ||
			!strings.Contains(stderr.String(), "of 3 masters") || !strings.Contains(stderr.String(), "given with -nodes") {
			t.Errorf("stderr = %q, want it to start %q and name 3 masters and the seeds", stderr.String(), want)
		}
		rs := results(t, stdout.String())
		if len(rs) != 2 {
			t.Fatalf("run(%q): %d results, want 2", args, len(rs))
		}
		for _, r := range rs {
			// A loaded 2-core machine under -race may stall a call past the
			// 50 ms Timeout now and then: at most 1 % from the fallback.
			if r.Errors != 0 || r.Decisions == 0 || r.Sources["fallback"]*100 > r.Decisions {
				t.Errorf("result %+v: want decisions on the cluster, no errors, under 1%% from the fallback", r)
			}
			// CPU per decision is measured on both sides: the bench
			// process's, and every server's of the cluster (INFO cpu).
			if r.ClientCPUus <= 0 || r.RedisCPUus == nil || *r.RedisCPUus <= 0 {
				t.Errorf("result %s/%s: CPU per decision client %v, Redis %v; want both measured", r.Workload, r.System, r.ClientCPUus, r.RedisCPUus)
			}
		}
		for _, k := range user {
			if n, err := cc.Exists(ctx, k).Result(); err != nil || n != 1 {
				t.Errorf("run(%q) deleted the user's key %q (%d, %v)", args, k, n, err)
			}
		}
		for i, m := range c.Masters {
			keys, err := m.Client(t).Keys(ctx, "*hlbench:*").Result()
			if err != nil {
				t.Fatal(err)
			}
			if len(keys) > 0 {
				t.Errorf("run(%q) left %d of its keys on master %d, such as %q", args, len(keys), i, keys[0])
			}
		}
	}

	plain := redistest.Start(t)
	err := run(ctx, []string{"-cluster", "-nodes", "redis://" + plain.Addr(), "-duration", "50ms"}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || errors.Is(err, errUsage) || !strings.Contains(err.Error(), plain.Addr()+" is not in cluster mode") {
		t.Errorf("run(-cluster -nodes plain node) = %v, want an error saying %s is not in cluster mode", err, plain.Addr())
	}
}

// TestFaultFailover kills a master of the embedded cluster (3 masters, 3
// replicas, node timeout 1s) at a third of an 8s run: its replica must be
// promoted within the run, hybridlimit's answers for the master's keys
// come from Redis again soon after (within 1.5s of the promotion seen by
// bench's poll; hybrid's own TestClusterFailover wants 1s), the failure
// mode answers them in between, and no caller sees an error. Bounded: the
// cluster's start (about 2s) and the 8s run.
func TestFaultFailover(t *testing.T) {
	redisOnly(t)
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	args := []string{"-cluster", "-fault", "failover", "-duration", "8s", "-interval", "500ms", "-concurrency", "8",
		"-instances", "2", "-keys", "10000", "-json", "-q", "-out", dir}
	if err := run(t.Context(), args, &stdout, &stderr); err != nil {
		t.Fatalf("run(%q) = %v, stderr:\n%s", args, err, stderr.String())
	}
	rows, sum := faultRun(t, stdout.String())
	checkFault(t, "failover", rows, sum, 16)
	if sum.PromotedMs == nil || sum.RemoteMs == nil || sum.LastFailureMs == nil {
		t.Fatalf("promoted_after_ms %v, remote_after_ms %v, last_failure_after_ms %v: want all three within the run",
			show(sum.PromotedMs), show(sum.RemoteMs), show(sum.LastFailureMs))
	}
	promoted, remote := *sum.PromotedMs, *sum.RemoteMs
	if left := 1000 * (sum.Seconds - sum.FaultAt); promoted <= 0 || promoted >= left {
		t.Errorf("promoted_after_ms %.0f: want in (0, %.0f), the rest of the run", promoted, left)
	}
	// bench sees the promotion by polling the replica every 10ms, so
	// hybrid may see it a little earlier.
	if remote < promoted-50 || remote > promoted+1500 {
		t.Errorf("remote_after_ms %.0f, promoted_after_ms %.0f: want the keys back with Redis within [-50ms, 1.5s] of the promotion", remote, promoted)
	}
	if sum.RedisRateMs != nil && *sum.RedisRateMs < 0 {
		t.Errorf("redis_rate_after_ms %.0f: want null or >= 0", *sum.RedisRateMs)
	}
	if sum.RecoveredMs != nil {
		t.Errorf("recovered_after_ms %.0f: want null for failover", *sum.RecoveredMs)
	}
	var failed int64
	for _, r := range faultRows(rows, sum.FaultAt, *sum.BackAt) {
		failed += r.VictimFailed
	}
	if failed == 0 || sum.Sources["fallback"] == 0 {
		t.Errorf("between the kill and the promotion: %d failure-mode answers for the master's keys (sources %v); want some", failed, sum.Sources)
	}
	path := filepath.Join(dir, faultChart)
	wantTexts(t, path, svgTexts(t, path), "failover 127.0.0.1:", "promoted 127.0.0.1:")
	t.Logf("failover: promoted %.0fms after the kill, hybridlimit's keys from Redis %.0fms after (last failure-mode answer %v ms), redis_rate back %v ms after",
		promoted, remote, show(sum.LastFailureMs), show(sum.RedisRateMs))
}

// TestFaultSlotMoves moves slots of the embedded cluster (3 masters, 60,000
// filler keys) under load with redis-cli: reshard (2,000 slots, about 3 s
// here) and scale-out (a fourth master, a quarter of the slots, about
// 8 s). The slots must be moved within the run, with no error to a
// caller, no breaker opened, and at most 0.5 % of the victim master's
// keys answered by the failure mode meanwhile; redis_rate's calls during
// the move are counted beside. Bounded: per move, the cluster's start,
// the fill and a 10 s (reshard) or 22 s (scale-out) run, and where the
// slots did not move within it, one run of twice the length: under -race
// on 2 cores the rebalance starts at 7-9 s (a third of the run, then
// add-node) and takes 8-9 s.
func TestFaultSlotMoves(t *testing.T) {
	redisOnly(t)
	redistest.RequireCLI(t)
	for _, tc := range []struct {
		fault    string
		duration time.Duration
		rows     int
	}{
		{faultReshard, 10 * time.Second, 10},
		{faultScaleOut, 22 * time.Second, 22},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			dir := t.TempDir()
			var rows []second
			var sum faultSummary
			// A machine busy with other work moves slots more slowly
			// (scale-out took over 14 s at a load average of 7 on 2
			// cores): a move that outlasts the run gets one more run of
			// twice the length.
			for try, d := range []time.Duration{tc.duration, 2 * tc.duration} {
				var stdout, stderr bytes.Buffer
				args := []string{"-cluster", "-fault", tc.fault, "-duration", d.String(), "-interval", "1s", "-concurrency", "8",
					"-instances", "2", "-keys", "10000", "-json", "-q", "-out", dir}
				if err := run(t.Context(), args, &stdout, &stderr); err != nil {
					t.Fatalf("run(%q) = %v, stderr:\n%s", args, err, stderr.String())
				}
				rows, sum = faultRun(t, stdout.String())
				checkFault(t, tc.fault, rows, sum, (try+1)*tc.rows)
				if sum.MoveSeconds != nil {
					break
				}
				t.Logf("the slots did not move within the %v run: once more, twice as long", d)
			}
			if sum.MoveSeconds == nil {
				t.Fatalf("move_s null: the slots did not move within the run")
			}
			if sum.Opened != 0 {
				t.Errorf("the victim master's breaker opened %d times while its slots moved", sum.Opened)
			}
			if sum.FaultVictimPct > 0.5 {
				t.Errorf("%.2f%% of the victim's keys answered by the failure mode while the slots moved, want <= 0.5%%", sum.FaultVictimPct)
			}
			if sum.RedisRateCalls == 0 {
				t.Errorf("redis_rate made no call while the slots moved")
			}
			path := filepath.Join(dir, faultChart)
			wantTexts(t, path, svgTexts(t, path), tc.fault+" ", "slots moved")
			t.Logf("%s: slots moved in %.2fs; hybridlimit: %.3f%% of the victim's keys from the failure mode, %d errors; redis_rate: %d calls, %d errors, p99 %.0fµs, slowest %.0fms",
				tc.fault, *sum.MoveSeconds, sum.FaultVictimPct, sum.Errors, sum.RedisRateCalls, sum.RedisRateErrors, sum.RedisRateP99us, sum.RedisRateSlowestMs)
		})
	}
}

// TestRateKey: the redis_rate probes of the cluster faults pick their keys
// by the Redis key redis_rate writes for them (reshard's picked them by a
// key with the limit appended, which redis_rate writes only for several
// limits, so its keys were spread over every master).
func TestRateKey(t *testing.T) {
	cl := miniCluster(t)
	rr := newRedisRate(cl, 1)
	defer func() {
		if err := rr.close(); err != nil {
			t.Error(err)
		}
	}()
	one := []hybrid.Limit{{Rate: 1000, Period: time.Second}}
	for _, limits := range [][]hybrid.Limit{one, append(one, hybrid.Limit{Rate: 100, Period: time.Minute})} {
		key := keyPrefix() + "probe:" + strconv.Itoa(len(limits))
		if _, _, err := rr.allow(t.Context(), 0, 0, key, limits); err != nil {
			t.Fatal(err)
		}
		want := rateKey(key, limits)
		found := false
		for _, m := range cl.minis {
			found = found || m.Exists(want)
		}
		if !found {
			t.Errorf("rateKey(%q, %d limits) = %q: no node holds it after an Allow", key, len(limits), want)
		}
	}
}
