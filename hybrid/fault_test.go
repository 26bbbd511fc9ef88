package hybrid

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
)

// cluster is 3 real redis-server nodes and a Limiter over them.
type cluster struct {
	srv []*redistest.Server
	lim *Limiter
}

func newCluster(t *testing.T, cfg Config) *cluster {
	t.Helper()
	srv := redistest.StartN(t, 3)
	for _, s := range srv {
		cfg.Addrs = append(cfg.Addrs, s.Addr())
	}
	if cfg.Breaker.OpenTimeout == 0 {
		cfg.Breaker.OpenTimeout = 300 * time.Millisecond
	}
	// These tests follow each decision to its node; leases (tested on their
	// own) would serve the hot keys of the load in process.
	cfg.Lease.Disable = true
	lim, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lim.Close() })
	return &cluster{srv: srv, lim: lim}
}

// keysOn returns n keys the ring routes to each server, by server index.
func (c *cluster) keysOn(t *testing.T, n int) [][]string {
	t.Helper()
	idx := map[string]int{}
	for i, s := range c.srv {
		idx[s.Addr()] = i
	}
	out := make([][]string, len(c.srv))
	for i := 0; ; i++ {
		k := fmt.Sprintf("client:%d", i)
		name, ok := c.lim.topo.ring.Locate(k)
		if !ok {
			t.Fatal("empty ring")
		}
		j := idx[name]
		if len(out[j]) < n {
			out[j] = append(out[j], k)
		}
		full := true
		for _, ks := range out {
			full = full && len(ks) == n
		}
		if full {
			return out
		}
		if i > 1_000_000 {
			t.Fatal("could not find keys for every node")
		}
	}
}

// observation is one decision under load.
type observation struct {
	node    int
	at      time.Duration
	latency time.Duration
	source  Source
	err     error
}

// load runs workers that call Allow on keys of every node until stop is
// closed or the bound on calls is reached, recording every decision.
func load(c *cluster, keys [][]string, lim Limit, stop <-chan struct{}, start time.Time) []observation {
	const workers, maxCalls = 6, 200_000
	var mu sync.Mutex
	var obs []observation
	var calls atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []observation
			for i := w; calls.Add(1) <= maxCalls; i++ {
				select {
				case <-stop:
					mu.Lock()
					obs = append(obs, mine...)
					mu.Unlock()
					return
				default:
				}
				node := i % len(keys)
				k := keys[node][(i/len(keys))%len(keys[node])]
				t0 := time.Now()
				r, err := c.lim.Allow(context.Background(), k, lim)
				mine = append(mine, observation{node, t0.Sub(start), time.Since(t0), r.Source, err})
			}
			mu.Lock()
			obs = append(obs, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return obs
}

// runFault drives load for total, calls fault at faultAt, and returns the
// observations.
func runFault(t *testing.T, c *cluster, keys [][]string, faultAt, total time.Duration, fault func()) []observation {
	t.Helper()
	stop := make(chan struct{})
	start := time.Now()
	done := make(chan []observation)
	go func() { done <- load(c, keys, PerSecond(1_000_000), stop, start) }()
	time.Sleep(faultAt)
	fault()
	time.Sleep(total - faultAt)
	close(stop)
	return <-done
}

func TestKillNode(t *testing.T) {
	for _, mode := range []FailureMode{Fallback, FailOpen, FailClosed} {
		t.Run(mode.String(), func(t *testing.T) {
			// A generous Timeout: a killed node refuses connections at once,
			// and healthy nodes must not time out on a busy 2-core machine.
			c := newCluster(t, Config{OnFailure: mode, Timeout: 250 * time.Millisecond})
			keys := c.keysOn(t, 20)
			const faultAt = 300 * time.Millisecond
			obs := runFault(t, c, keys, faultAt, 1200*time.Millisecond, func() {
				if err := c.srv[1].Kill(); err != nil {
					t.Error(err)
				}
			})
			want := map[FailureMode]Source{Fallback: SourceFallback, FailOpen: SourceFailOpen, FailClosed: SourceFailClosed}[mode]
			var maxLat time.Duration
			firstLocal := time.Duration(-1)
			remoteWanted, notRemote := 0, 0
			for _, o := range obs {
				if o.err != nil {
					t.Fatalf("Allow returned %v to the caller", o.err)
				}
				if o.node != 1 || o.at < faultAt-10*time.Millisecond {
					remoteWanted++
					if o.source != SourceRemote {
						notRemote++
					}
				}
				if o.node == 1 && o.at > faultAt+200*time.Millisecond && o.source != want {
					t.Fatalf("key of the killed node answered by %v at %v, want %v", o.source, o.at, want)
				}
				if o.node == 1 && o.source == want && firstLocal < 0 {
					firstLocal = o.at - faultAt
				}
				maxLat = max(maxLat, o.latency)
			}
			// A call to a healthy node can time out when the test machine
			// stalls (-race, other packages' tests); more than 1% is a fault.
			if notRemote*100 > remoteWanted {
				t.Errorf("%d of %d answers for healthy nodes (or before the kill) not from Redis", notRemote, remoteWanted)
			}
			st := c.lim.Stats()
			if n := st.Nodes[nodeIndex(st, c.srv[1].Addr())]; !n.Degraded || n.Breaker == "closed" {
				t.Errorf("killed node: breaker %s, degraded %v; want it not closed", n.Breaker, n.Degraded)
			}
			t.Logf("kill, %v: %d decisions (%d of %d healthy answers not remote), first %v answer %v after the kill, slowest Allow %v, breaker of node 1: %s (opened %d), stats %v",
				mode, len(obs), notRemote, remoteWanted, want, firstLocal, maxLat, st.Nodes[nodeIndex(st, c.srv[1].Addr())].Breaker, st.Nodes[nodeIndex(st, c.srv[1].Addr())].Opened, st.Decisions)
		})
	}
}

func nodeIndex(st Stats, name string) int {
	for i, n := range st.Nodes {
		if n.Name == name {
			return i
		}
	}
	return -1
}

func TestPauseNode(t *testing.T) {
	c := newCluster(t, Config{Timeout: 100 * time.Millisecond})
	keys := c.keysOn(t, 20)
	timeout := c.lim.cfg.Timeout
	const faultAt = 300 * time.Millisecond
	var resumedAt time.Duration
	start := time.Now()
	stop := make(chan struct{})
	done := make(chan []observation)
	go func() { done <- load(c, keys, PerSecond(1_000_000), stop, start) }()
	time.Sleep(faultAt)
	if err := c.srv[1].Pause(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(800 * time.Millisecond)
	if err := c.srv[1].Resume(); err != nil {
		t.Fatal(err)
	}
	resumedAt = time.Since(start)
	time.Sleep(c.lim.cfg.Breaker.OpenTimeout + 500*time.Millisecond)
	close(stop)
	obs := <-done

	var maxLat, maxLocal time.Duration
	var backRemote time.Duration = -1
	var opened time.Duration = -1
	healthy, slowHealthy := 0, 0
	for _, o := range obs {
		if o.err != nil {
			t.Fatalf("Allow returned %v", o.err)
		}
		maxLat = max(maxLat, o.latency)
		if o.node == 1 && o.source == SourceFallback && o.at > faultAt && o.at < resumedAt {
			maxLocal = max(maxLocal, o.latency)
			if opened < 0 {
				opened = o.at - faultAt
			}
		}
		if o.node == 1 && o.source == SourceRemote && o.at > resumedAt && backRemote < 0 {
			backRemote = o.at - resumedAt
		}
		if o.node != 1 {
			healthy++
			if o.source != SourceRemote {
				slowHealthy++
			}
		}
	}
	// With a 50ms Timeout a healthy node's call can time out when the test
	// machine stalls; more than 1% would be a fault, not a stall.
	if slowHealthy*100 > healthy {
		t.Errorf("%d of %d answers for keys of healthy nodes not from Redis", slowHealthy, healthy)
	}
	// Once the breaker is open, the paused node's keys are answered in
	// process: the median of those answers, from 3 Timeouts after SIGSTOP.
	var local []time.Duration
	for _, o := range obs {
		if o.node == 1 && o.source == SourceFallback && o.at > faultAt+3*timeout && o.at+o.latency < resumedAt {
			local = append(local, o.latency)
		}
	}
	slices.Sort(local)
	if len(local) == 0 {
		t.Fatal("no fallback answers while the node was paused")
	}
	medianLocal := local[len(local)/2]
	if maxLat > 3*timeout {
		t.Errorf("slowest Allow took %v, want <= 3 × Timeout = %v", maxLat, 3*timeout)
	}
	if backRemote < 0 {
		t.Fatalf("keys of the paused node never went back to Redis after Resume")
	}
	if limit := c.lim.cfg.Breaker.OpenTimeout + 3*timeout; backRemote > limit {
		t.Errorf("back to SourceRemote %v after Resume, want within OpenTimeout plus a probe (%v)", backRemote, limit)
	}
	t.Logf("pause: slowest Allow %v (Timeout %v); first call answered by fallback started %v after SIGSTOP; slowest fallback answer %v; with the breaker open, %d fallback answers, median %v; back to remote %v after SIGCONT (OpenTimeout %v); healthy nodes: %d of %d answers not from Redis",
		maxLat, timeout, opened, maxLocal, len(local), medianLocal, backRemote, c.lim.cfg.Breaker.OpenTimeout, slowHealthy, healthy)
}

func TestRestartNode(t *testing.T) {
	c := newCluster(t, Config{Timeout: 250 * time.Millisecond})
	keys := c.keysOn(t, 20)
	const faultAt = 300 * time.Millisecond
	var restarted time.Duration
	start := time.Now()
	obs := runFault(t, c, keys, faultAt, 1500*time.Millisecond, func() {
		if err := c.srv[1].Restart(); err != nil {
			t.Error(err)
		}
		restarted = time.Since(start)
	})
	var back time.Duration = -1
	fallbacks := 0
	for _, o := range obs {
		if o.err != nil {
			t.Fatalf("Allow returned %v", o.err)
		}
		if o.node == 1 && o.source != SourceRemote {
			fallbacks++
		}
		if o.node == 1 && o.at > restarted && o.source == SourceRemote && back < 0 {
			back = o.at - restarted
		}
	}
	if back < 0 {
		t.Fatal("keys of the restarted node never went back to Redis")
	}
	// The script cache was lost with the process: decisions there now come
	// from scripts loaded again (on connect, or on NOSCRIPT), and write the
	// new process's keys.
	ctx := context.Background()
	r, err := c.lim.Allow(ctx, keys[1][0], PerHour(100))
	if err != nil || r.Source != SourceRemote || !r.Allowed {
		t.Fatalf("Allow after restart = %+v, %v; want allowed by Redis", r, err)
	}
	rdb := c.srv[1].Client(t)
	if n, err := rdb.Exists(ctx, "rl:{"+keys[1][0]+"}:tb:100:1h").Result(); err != nil || n != 1 {
		t.Errorf("restarted node lacks the key just decided (%d, %v)", n, err)
	}
	t.Logf("restart: %d answers by fallback around the restart; back to remote %v after the new process answered", fallbacks, back)
}

func TestAddRemoveNodeUnderLoad(t *testing.T) {
	c := newCluster(t, Config{Timeout: 250 * time.Millisecond})
	extra := redistest.Start(t)
	xc := redis.NewClient(&redis.Options{Addr: extra.Addr()})
	t.Cleanup(func() { xc.Close() })
	keys := c.keysOn(t, 30)
	obs := runFault(t, c, keys, 300*time.Millisecond, 900*time.Millisecond, func() {
		if err := c.lim.AddNode(Node{Name: "extra", Client: xc}); err != nil {
			t.Error(err)
		}
		time.Sleep(200 * time.Millisecond)
		if err := c.lim.RemoveNode(c.srv[2].Addr()); err != nil {
			t.Error(err)
		}
	})
	notRemote := 0
	for _, o := range obs {
		if o.err != nil {
			t.Fatalf("Allow returned %v", o.err)
		}
		if o.source != SourceRemote {
			notRemote++
		}
	}
	if notRemote*100 > len(obs) {
		t.Errorf("%d of %d answers during membership changes not from Redis", notRemote, len(obs))
	}
	// Keys now routed to the extra node are decided there.
	moved := 0
	ctx := context.Background()
	for _, ks := range keys {
		for _, k := range ks {
			if name, _ := c.lim.topo.ring.Locate(k); name != "extra" {
				continue
			}
			moved++
			// A limit whose key outlives the check (a bucket key lives
			// until the bucket is full again).
			if _, err := c.lim.Allow(ctx, k, PerHour(1000)); err != nil {
				t.Fatal(err)
			}
			if n, _ := xc.Exists(ctx, "rl:{"+k+"}:tb:1000:1h").Result(); n != 1 {
				t.Errorf("key %s routed to the extra node has no state there", k)
			}
		}
	}
	if moved == 0 {
		t.Error("no key moved to the added node")
	}
	if _, err := c.lim.topo.ring.Locate("x"); !err {
		t.Fatal("empty ring")
	}
	for _, m := range c.lim.topo.ring.Members() {
		if m == c.srv[2].Addr() {
			t.Errorf("removed node %s still in the ring", m)
		}
	}
	t.Logf("add/remove: %d decisions, no errors, %d not from Redis; %d of %d sampled keys moved to the added node", len(obs), notRemote, moved, 3*30)
}

// TestTimedOutCallNotRerun counts script executions on the server: a call
// that timed out on a paused node runs once when the node resumes, never
// twice (no retry).
func TestTimedOutCallNotRerun(t *testing.T) {
	c := newCluster(t, Config{Timeout: 30 * time.Millisecond})
	keys := c.keysOn(t, 1)
	rdb := c.srv[1].Client(t)
	ctx := context.Background()
	if _, err := c.lim.Allow(ctx, keys[1][0], PerHour(100)); err != nil {
		t.Fatal(err)
	}
	before := redistest.ScriptCalls(t, rdb)
	if err := c.srv[1].Pause(); err != nil {
		t.Fatal(err)
	}
	r, err := c.lim.Allow(ctx, keys[1][0], PerHour(100))
	if err != nil || r.Source != SourceFallback {
		t.Fatalf("Allow on a paused node = %+v, %v; want SourceFallback", r, err)
	}
	if err := c.srv[1].Resume(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	after := before
	for time.Now().Before(deadline) && after == before {
		time.Sleep(20 * time.Millisecond)
		after = redistest.ScriptCalls(t, rdb)
	}
	time.Sleep(200 * time.Millisecond)
	after = redistest.ScriptCalls(t, rdb)
	if after-before != 1 {
		t.Errorf("scripts ran %d times for one timed-out Allow, want 1", after-before)
	}
}

// TestStatsChangesNothing: reading Stats does not move an open breaker
// whose OpenTimeout has passed to half-open (a Prometheus scrape did). The
// node is a redis-server that was stopped: it refuses connections.
func TestStatsChangesNothing(t *testing.T) {
	srv := redistest.Start(t)
	addr := srv.Addr()
	lim, err := New(Config{Addrs: []string{addr}, Lease: LeaseConfig{Disable: true}, Breaker: BreakerConfig{OpenTimeout: 100 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer lim.Close()
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	br := lim.topo.byName(addr).br
	for i := 0; i < 20 && !br.Open(); i++ {
		lim.Allow(context.Background(), fmt.Sprint("stats:", i), PerSecond(10))
	}
	if !br.Open() {
		t.Fatal("the breaker of a node refusing connections did not open")
	}
	time.Sleep(150 * time.Millisecond)
	before := br.Stats()
	for range 10 {
		st := lim.Stats()
		if got := st.Nodes[nodeIndex(st, addr)].Breaker; got != "half-open" {
			t.Errorf("Stats reports the breaker %q after OpenTimeout, want half-open", got)
		}
	}
	if after := br.Stats(); after != before {
		t.Errorf("Stats changed the breaker: %+v, then %+v", before, after)
	}
}

// TestMaybeCharged: a request the failure mode answers says whether it may
// have been charged: true when it was sent and its reply did not come (the
// server paused past the Timeout runs it on resume), false when it was
// never written (the server gone: the connection is refused; the breaker
// open) and for Peek, which charges nothing.
func TestMaybeCharged(t *testing.T) {
	srv := redistest.Start(t)
	lim, err := New(Config{Addrs: []string{srv.Addr()}, Timeout: 50 * time.Millisecond,
		Breaker: BreakerConfig{ConsecutiveFailures: 100, OpenTimeout: time.Minute},
		Lease:   LeaseConfig{Disable: true}, DenyCache: DenyCacheConfig{Disable: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer lim.Close()
	ctx := context.Background()
	l := PerMinute(10)
	check := func(what string, r Result, err error, want bool) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if r.Source != SourceFallback || r.MaybeCharged != want {
			t.Errorf("%s: Source %v, MaybeCharged %v; want fallback, %v", what, r.Source, r.MaybeCharged, want)
		}
	}
	r, err := lim.Allow(ctx, "k", l)
	if err != nil || r.Source != SourceRemote || r.MaybeCharged {
		t.Fatalf("healthy: %+v, %v; want Redis's answer, not MaybeCharged", r, err)
	}
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	r, err = lim.AllowN(ctx, "k", 2, l)
	check("paused, AllowN", r, err, true)
	r, err = lim.AllowAtMost(ctx, "k", 2, l)
	check("paused, AllowAtMost", r, err, true)
	r, err = lim.Peek(ctx, "k", l)
	check("paused, Peek", r, err, false)
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	for range 3 { // the connections the timeouts broke are redialled: refused
		r, err = lim.Allow(ctx, "k", l)
		check("stopped", r, err, false)
	}
}
