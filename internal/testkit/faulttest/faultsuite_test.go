package faulttest

// TestFaultSuite: the faults on the wire and on the server that real
// deployments meet, each on one of 3 real redis-server nodes behind
// toxiproxy, under 24 concurrent callers: a phase with the fault, then a
// phase after it is cleared. Each scenario lasts about 1.5 s (bounded in
// calls and time); the suite about 30 s on 2 cores.
//
// Every scenario asserts: no error reaches a caller; no call is slower than
// 1.5 × Timeout (by design Timeout + 5 ms; the slack is for a loaded 2-core
// machine under -race); keys of healthy nodes stay with Redis; the sick
// node's keys are back with Redis after the fault; connections opened to
// the sick node are bounded by its pool size per OpenTimeout; and per-key
// admissions stay within the limit plus what the failure mode may admit.
// goleak (TestMain) checks the goroutines after Close.

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/hybridlimit/hybridlimit/hybrid"
	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
	"github.com/hybridlimit/hybridlimit/internal/testkit/toxitest"
)

type faultScenario struct {
	name string
	// inject starts the fault on node 0 and returns what clears it.
	inject func(t *testing.T, c *toxicCluster) (clear func())
	// sickRemote is the least share of node 0's answers that must still
	// come from Redis during the fault (0: none need to).
	sickRemote float64
	// batchOff runs the scenario with Batch.Disable.
	batchOff bool
	// pool, when set, is the pool size of every node's client.
	pool int
	// check runs extra assertions after the scenario.
	check func(t *testing.T, c *toxicCluster, during *tally)
}

func TestFaultSuite(t *testing.T) {
	const (
		workers = 24
		during  = 1200 * time.Millisecond
		after   = 800 * time.Millisecond
	)
	lim := PerMinute(300)
	scenarios := []faultScenario{
		{name: "reset_peer", inject: func(t *testing.T, c *toxicCluster) func() {
			n := c.px[0].Add(t, "reset_peer", toxitest.Upstream, map[string]any{"timeout": 0})
			return func() { c.px[0].Remove(t, n) }
		}},
		{name: "limit_data", inject: func(t *testing.T, c *toxicCluster) func() {
			n := c.px[0].Add(t, "limit_data", toxitest.Downstream, map[string]any{"bytes": 200})
			return func() { c.px[0].Remove(t, n) }
		}},
		{name: "slicer", sickRemote: 0.999, inject: func(t *testing.T, c *toxicCluster) func() {
			n := c.px[0].Add(t, "slicer", toxitest.Downstream, map[string]any{"average_size": 64, "size_variation": 32, "delay": 100})
			return func() { c.px[0].Remove(t, n) }
		}},
		{name: "latency-0.5x-upstream-batch-off", batchOff: true, sickRemote: 0, inject: func(t *testing.T, c *toxicCluster) func() {
			n := c.px[0].Latency(t, toxitest.Upstream, c.timeout/2, c.timeout/10)
			return func() { c.px[0].Remove(t, n) }
		}},
		{name: "latency-2x-upstream", inject: func(t *testing.T, c *toxicCluster) func() {
			n := c.px[0].Latency(t, toxitest.Upstream, 2*c.timeout, 0)
			return func() { c.px[0].Remove(t, n) }
		}},
		{name: "pool-exhaustion", pool: 2, batchOff: true, sickRemote: 0, inject: func(t *testing.T, c *toxicCluster) func() {
			n := c.px[0].Latency(t, toxitest.Downstream, c.timeout/4, 0)
			return func() { c.px[0].Remove(t, n) }
		}},
		{name: "flapping", inject: func(t *testing.T, c *toxicCluster) func() {
			stop, done := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(done)
				for i := 0; ; i++ {
					select {
					case <-stop:
						c.px[0].Enable(t)
						return
					case <-time.After(time.Duration(100+(i*73)%200) * time.Millisecond):
					}
					if i%2 == 0 {
						c.px[0].Disable()
					} else {
						c.px[0].Enable(t)
					}
				}
			}()
			return func() { close(stop); <-done }
		}},
		{name: "black-hole", inject: func(t *testing.T, c *toxicCluster) func() {
			n := c.px[0].Add(t, "timeout", toxitest.Upstream, map[string]any{"timeout": 0})
			return func() { c.px[0].Remove(t, n) }
		}},
		{name: "script-flush", sickRemote: 0.99, inject: func(t *testing.T, c *toxicCluster) func() {
			rdb := c.srv[0].Client(t)
			stop, done := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(done)
				for {
					select {
					case <-stop:
						return
					case <-time.After(50 * time.Millisecond):
					}
					rdb.ScriptFlush(context.Background())
					rdb.FunctionFlush(context.Background())
				}
			}()
			return func() { close(stop); <-done }
		}},
		{name: "readonly", inject: func(t *testing.T, c *toxicCluster) func() {
			rdb := c.srv[0].Client(t)
			if err := rdb.ReplicaOf(context.Background(), "127.0.0.1", fmt.Sprint(c.srv[1].Port())).Err(); err != nil {
				t.Fatal(err)
			}
			return func() {
				if err := rdb.ReplicaOf(context.Background(), "no", "one").Err(); err != nil {
					t.Error(err)
				}
			}
		}, check: func(t *testing.T, c *toxicCluster, during *tally) {
			if ns := c.nodeStats(0); ns.Undecided[ReasonServer] == 0 {
				t.Errorf("READONLY answers not counted as server errors: %v", ns.Undecided)
			}
		}},
		{name: "oom-noeviction", inject: func(t *testing.T, c *toxicCluster) func() {
			rdb := c.srv[0].Client(t)
			ctx := context.Background()
			used := redistest.InfoInt(t, rdb, "memory", "used_memory")
			if err := rdb.ConfigSet(ctx, "maxmemory", fmt.Sprint(used+64<<10)).Err(); err != nil {
				t.Fatal(err)
			}
			// Fill what is left, so that every write is refused.
			for i := 0; i < 10_000; i++ {
				if err := rdb.Set(ctx, fmt.Sprintf("ballast:%d", i), string(make([]byte, 1024)), 0).Err(); err != nil {
					break
				}
			}
			return func() {
				if err := rdb.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
					t.Error(err)
				}
			}
		}, check: func(t *testing.T, c *toxicCluster, during *tally) {
			if ns := c.nodeStats(0); ns.Undecided[ReasonServer] == 0 {
				t.Errorf("OOM answers not counted as server errors: %v", ns.Undecided)
			}
		}},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			cfg := Config{Batch: BatchConfig{Disable: sc.batchOff}, Lease: LeaseConfig{HotRate: 100}}
			c := newToxicClusterPool(t, cfg, sc.pool)
			timeout, open := c.timeout, c.open
			conns := c.connections(t, 0)
			start := time.Now()
			clear := sc.inject(t, c)
			got := c.drive(workers, during, lim, nil)
			clear()
			newConns := c.connections(t, 0) - conns
			// After the fault: an OpenTimeout for the breaker to probe,
			// then the node's keys must be decided by Redis again.
			time.Sleep(open + timeout)
			rec := c.drive(workers, after, lim, nil)
			ns := c.nodeStats(0)
			t.Logf("%s: during: %v; after: %v; breaker opened %d, undecided %v, %d new connections",
				sc.name, got, rec, ns.Opened, ns.Undecided, newConns)
			for i := 1; i < 3; i++ {
				if h := c.nodeStats(i); h.Opened != 0 {
					t.Logf("healthy node %d: breaker opened %d, undecided %v, latency %v", i, h.Opened, h.Undecided, h.Latency.Counts)
				}
			}
			if got.errs+rec.errs != 0 {
				t.Errorf("%d errors reached callers", got.errs+rec.errs)
			}
			got.checkBudget(t, timeout)
			rec.checkBudget(t, timeout)
			// A healthy node's call can time out when the test machine
			// stalls (-race, other packages' tests): more than 1 % is a
			// fault, not a stall.
			for i := 1; i < 3; i++ {
				if share := got.notRemote(i); share > 0.01 {
					t.Errorf("healthy node %d: %.2f%% of answers not from Redis during the fault", i, 100*share)
				}
			}
			if share := 1 - got.notRemote(0); share < sc.sickRemote {
				t.Errorf("sick node: %.2f%% of answers from Redis during the fault, want >= %.1f%%", 100*share, 100*sc.sickRemote)
			}
			// After the fault the node's keys are Redis's again; a stall of
			// the test machine (all nodes' slowest calls at once) can still
			// time a few round trips out.
			if share := rec.notRemote(0); share > 0.05 {
				t.Errorf("after the fault: %.2f%% of the sick node's answers not from Redis", 100*share)
			}
			if ns.Breaker != "closed" {
				t.Errorf("after the fault: the sick node's breaker is %s, want closed", ns.Breaker)
			}
			pool := int64(c.nodeStats(0).Pool)
			if bound := pool * int64(during/open+2); newConns > bound {
				t.Errorf("%d new connections to the sick node in %v, want <= %d (pool %d per OpenTimeout)", newConns, during, bound, pool)
			}
			// Each key may admit its limit and what refilled meanwhile in
			// Redis, plus the units of a lease (MaxFraction 1 %), and, while
			// the failure mode answers, as much again in process
			// (FallbackShare 1).
			keys := int64(len(c.keys[0]))
			refill := int64(float64(lim.Rate) * time.Since(start).Seconds() / lim.Period.Seconds())
			perKey := lim.Rate + refill + lim.Rate/100 + 1
			t.Logf("%s: admitted: sick node's keys %d (bound %d), healthy %d and %d (bound %d each); slowest %v, %v, %v (Timeout %v)",
				sc.name, got.admitted[0]+rec.admitted[0], keys*2*perKey, got.admitted[1]+rec.admitted[1], got.admitted[2]+rec.admitted[2], keys*perKey,
				max(got.slowest[0], rec.slowest[0]), max(got.slowest[1], rec.slowest[1]), max(got.slowest[2], rec.slowest[2]), timeout)
			if bound := keys * 2 * perKey; got.admitted[0]+rec.admitted[0] > bound {
				t.Errorf("sick node's %d keys admitted %d, want <= %d", keys, got.admitted[0]+rec.admitted[0], bound)
			}
			for i := 1; i < 3; i++ {
				if bound := keys * perKey; got.admitted[i]+rec.admitted[i] > bound {
					t.Errorf("healthy node %d's keys admitted %d, want <= %d", i, got.admitted[i]+rec.admitted[i], bound)
				}
			}
			if sc.check != nil {
				sc.check(t, c, got)
			}
		})
	}
}
