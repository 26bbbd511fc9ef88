package faulttest

// The fault suite on the wire: 3 real redis-server nodes, each behind a
// toxiproxy proxy run in process, under 64 concurrent callers. Each scenario
// is bounded in calls and time (a few seconds at most); the whole suite
// stays under a minute on 2 cores.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	. "github.com/hybridlimit/hybridlimit/hybrid"
	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
	"github.com/hybridlimit/hybridlimit/internal/testkit/toxitest"
	"github.com/hybridlimit/hybridlimit/remote"
)

// warmUp is hybrid's bound on the warm-up of New and AddNode (its
// warmTimeout): nodes that do not answer by then are left to the breaker.
const warmUp = time.Second

// toxicCluster is 3 redis-server nodes, a proxy in front of each, and a
// Limiter over the proxies.
type toxicCluster struct {
	srv   []*redistest.Server
	px    []*toxitest.Proxy
	lim   *Limiter
	keys  [][]string // keys the ring routes to each node, by index
	names []string   // node names (the proxies' addresses), by index
	// timeout and open are the Limiter's Timeout and
	// Breaker.OpenTimeout.
	timeout, open time.Duration
}

func newToxicCluster(t *testing.T, cfg Config) *toxicCluster {
	t.Helper()
	return newToxicClusterPool(t, cfg, 0)
}

// newToxicClusterPool is newToxicCluster with clients of the given pool
// size (0: go-redis's default).
func newToxicClusterPool(t *testing.T, cfg Config, pool int) *toxicCluster {
	t.Helper()
	c := &toxicCluster{srv: redistest.StartN(t, 3)}
	for _, s := range c.srv {
		p := toxitest.New(t, s.Addr())
		c.px = append(c.px, p)
		c.names = append(c.names, p.Addr())
	}
	if pool == 0 {
		cfg.Addrs = append(cfg.Addrs, c.names...)
	} else {
		for _, a := range c.names {
			rdb := remote.NewClient(&redis.Options{Addr: a, PoolSize: pool})
			t.Cleanup(func() { rdb.Close() })
			cfg.Nodes = append(cfg.Nodes, Node{Name: a, Client: rdb})
		}
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 100 * time.Millisecond
	}
	if cfg.Breaker.OpenTimeout == 0 {
		cfg.Breaker.OpenTimeout = 300 * time.Millisecond
	}
	lim, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lim.Close() })
	c.lim, c.timeout, c.open = lim, cfg.Timeout, cfg.Breaker.OpenTimeout
	c.keys = make([][]string, len(c.srv))
	for i := 0; ; i++ {
		k := "toxic:" + strconv.Itoa(i)
		name := lim.NodeOf(k)
		j := slices.Index(c.names, name)
		if len(c.keys[j]) < 64 {
			c.keys[j] = append(c.keys[j], k)
		}
		if len(c.keys[0]) == 64 && len(c.keys[1]) == 64 && len(c.keys[2]) == 64 {
			break
		}
	}
	return c
}

// connections is the number of connections node i has accepted so far.
func (c *toxicCluster) connections(t *testing.T, i int) int64 {
	t.Helper()
	return redistest.InfoInt(t, c.srv[i].Client(t), "stats", "total_connections_received")
}

// tally is what the callers saw, per node.
type tally struct {
	calls    [3]int64
	bySource [3]map[Source]int64
	slowest  [3]time.Duration
	admitted [3]int64
	errs     int64
	// keyCalls counts the calls per key: the callers do not spread them
	// evenly when the machine holds some of them off.
	keyCalls map[string]int64
	// stall is the longest a goroutine that only sleeps 1 ms woke late
	// during the drive: how long the test machine (2 cores, -race,
	// other packages' tests) held any goroutine off a CPU. A caller can
	// be held off as long on top of its budget.
	stall time.Duration
}

func (a *tally) add(b *tally) {
	for i := range a.calls {
		a.calls[i] += b.calls[i]
		a.admitted[i] += b.admitted[i]
		a.slowest[i] = max(a.slowest[i], b.slowest[i])
		if a.bySource[i] == nil {
			a.bySource[i] = map[Source]int64{}
		}
		for s, n := range b.bySource[i] {
			a.bySource[i][s] += n
		}
	}
	a.errs += b.errs
	a.stall = max(a.stall, b.stall)
	if a.keyCalls == nil {
		a.keyCalls = map[string]int64{}
	}
	for k, n := range b.keyCalls {
		a.keyCalls[k] += n
	}
}

// checkBudget fails t when a call on any node took longer than 1.5 ×
// timeout plus the longest stall of the test machine seen meanwhile.
func (a *tally) checkBudget(t *testing.T, timeout time.Duration) {
	t.Helper()
	for i := range a.calls {
		if bound := timeout*3/2 + a.stall; a.slowest[i] > bound {
			t.Errorf("node %d: slowest Allow %v, want <= 1.5 × Timeout (%v) + the machine's longest stall (%v)", i, a.slowest[i], timeout, a.stall)
		}
	}
}

// notRemote is the share of node i's answers not decided by Redis (a
// lease or a cached denial is decided by Redis).
func (a *tally) notRemote(i int) float64 {
	if a.calls[i] == 0 {
		return 0
	}
	n := a.bySource[i][SourceFallback] + a.bySource[i][SourceFailOpen] + a.bySource[i][SourceFailClosed]
	return float64(n) / float64(a.calls[i])
}

func (a *tally) String() string {
	var b strings.Builder
	for i := range a.calls {
		fmt.Fprintf(&b, "node %d: %d calls, %.2f%% not from Redis, slowest %v, admitted %d; ", i, a.calls[i], 100*a.notRemote(i), a.slowest[i], a.admitted[i])
	}
	fmt.Fprintf(&b, "%d errors, machine stalled up to %v", a.errs, a.stall)
	return b.String()
}

// drive runs workers callers over every node's keys for d (at most
// maxCalls calls in all), with ctx from mkCtx (nil: Background), and
// returns what they saw.
func (c *toxicCluster) drive(workers int, d time.Duration, lim Limit, mkCtx func(i int) (context.Context, context.CancelFunc)) *tally {
	const maxCalls = 400_000
	var total tally
	var mu sync.Mutex
	var n atomic.Int64
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	stalls := redistest.WatchStalls()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine tally
			// Each caller goes round the nodes (and their keys): bound to
			// one node, the callers of a node whose keys are denied in
			// process spin, and starve the others on a 2-core machine.
			for i := w; n.Add(1) <= maxCalls && time.Now().Before(end); i++ {
				node := i % 3
				key := c.keys[node][(i/3)%len(c.keys[node])]
				ctx, cancel := context.Background(), context.CancelFunc(func() {})
				if mkCtx != nil {
					ctx, cancel = mkCtx(i)
				}
				t0 := time.Now()
				r, err := c.lim.Allow(ctx, key, lim)
				el := time.Since(t0)
				cancel()
				mine.calls[node]++
				if mine.keyCalls == nil {
					mine.keyCalls = map[string]int64{}
				}
				mine.keyCalls[key]++
				if err != nil {
					mine.errs++
					continue
				}
				if mine.bySource[node] == nil {
					mine.bySource[node] = map[Source]int64{}
				}
				mine.bySource[node][r.Source]++
				mine.slowest[node] = max(mine.slowest[node], el)
				if r.Allowed {
					mine.admitted[node]++
				}
			}
			mu.Lock()
			total.add(&mine)
			mu.Unlock()
		}()
	}
	wg.Wait()
	total.stall = stalls()
	return &total
}

// nodeStats returns the stats of node i.
func (c *toxicCluster) nodeStats(i int) NodeStats {
	st := c.lim.Stats()
	for _, ns := range st.Nodes {
		if ns.Name == c.names[i] {
			return ns
		}
	}
	panic("no node " + c.names[i])
}

// TestSlowNodeIsNotDead: a node whose replies come in half the Timeout
// (± 20 %), on either stream, keeps its keys: at most 0.1 % of its answers
// come from the failure mode and its breaker never opens.
func TestSlowNodeIsNotDead(t *testing.T) {
	for _, dir := range []toxitest.Direction{toxitest.Downstream, toxitest.Upstream} {
		t.Run(string(dir), func(t *testing.T) {
			c := newToxicCluster(t, Config{Lease: LeaseConfig{Disable: true}, DenyCache: DenyCacheConfig{Disable: true}})
			timeout := c.timeout
			c.drive(64, 200*time.Millisecond, PerSecond(1_000_000), nil) // warm
			conns := c.connections(t, 0)
			c.px[0].Latency(t, dir, timeout/2, timeout/10)
			// A reply takes at most 0.6 × Timeout, so a call has 0.4 ×
			// Timeout of headroom. A stall of the machine longer than
			// that (GC under -race, 64 callers on 2 cores) times calls
			// out however the limiter behaves; such a run says nothing
			// about a slow node and is measured again, at most 3 times
			// (about 7 s in all). A run without such a stall is judged.
			headroom := timeout - timeout/2 - timeout/10
			var got *tally
			for try := 1; try <= 3; try++ {
				got = c.drive(64, 2*time.Second, PerSecond(1_000_000), nil)
				if got.stall < headroom {
					break
				}
				t.Logf("try %d: the machine stalled %v, more than the %v of headroom: %v", try, got.stall, headroom, got)
			}
			ns := c.nodeStats(0)
			newConns := c.connections(t, 0) - conns
			t.Logf("latency %v ± %v %s: %v; breaker opened %d, %d new connections, undecided %v, in flight %d, latency %v", timeout/2, timeout/10, dir, got, ns.Opened, newConns, ns.Undecided, ns.InFlight, ns.Latency.Counts)
			if got.errs != 0 {
				t.Errorf("%d errors reached callers", got.errs)
			}
			if share := got.notRemote(0); share > 0.001 {
				t.Errorf("slow node: %.2f%% of %d answers from the failure mode, want <= 0.1%%", 100*share, got.calls[0])
			}
			if ns.Opened != 0 {
				t.Errorf("slow node's breaker opened %d times, want 0", ns.Opened)
			}
			got.checkBudget(t, timeout)
		})
	}
}

// TestOneBudgetPerCall: no Allow returns later than Timeout (+ ε) after it
// was called, whatever path it takes: hot keys (a lease, then a decision)
// and cold keys (a wait for a batch) on a node whose replies take 1× and
// 2× the Timeout.
func TestOneBudgetPerCall(t *testing.T) {
	type run struct {
		factor int
		dir    toxitest.Direction
		batch  bool
	}
	var runs []run
	for _, factor := range []int{1, 2} {
		runs = append(runs, run{factor, toxitest.Downstream, true}, run{factor, toxitest.Downstream, false}, run{factor, toxitest.Upstream, true})
	}
	for _, r := range runs {
		factor, dir, batch := r.factor, r.dir, r.batch
		{
			t.Run(fmt.Sprintf("latency=%dxTimeout/%s/batch=%v", factor, dir, batch), func(t *testing.T) {
				c := newToxicCluster(t, Config{Batch: BatchConfig{Disable: !batch}, Lease: LeaseConfig{HotRate: 50}})
				timeout := c.timeout
				c.drive(64, 200*time.Millisecond, PerSecond(1_000_000), nil)
				c.px[0].Latency(t, dir, time.Duration(factor)*timeout, 0)
				// A run during which the machine stalled for more than
				// a quarter of the Timeout is measured again, at most 3
				// times (about 5 s): such a stall delays callers beyond
				// what the probe sees of it.
				var got *tally
				for try := 1; try <= 3; try++ {
					got = c.drive(64, 1500*time.Millisecond, PerSecond(1_000_000), nil)
					if got.stall < timeout/4 {
						break
					}
					t.Logf("try %d: the machine stalled %v: %v", try, got.stall, got)
				}
				ns := c.nodeStats(0)
				t.Logf("%v; breaker opened %d, undecided %v", got, ns.Opened, ns.Undecided)
				if got.errs != 0 {
					t.Errorf("%d errors reached callers", got.errs)
				}
				// By design Timeout + 5 ms; 1.5 × Timeout plus the
				// machine's stalls so that a loaded 2-core machine
				// under -race does not flake.
				got.checkBudget(t, timeout)
			})
		}
	}
}

// TestCancelledCallerLeavesAtOnce: a caller whose context ends returns at
// once, answered by the failure mode, and its leaving counts neither
// against the node nor as a reason to reconnect.
func TestCancelledCallerLeavesAtOnce(t *testing.T) {
	c := newToxicCluster(t, Config{Lease: LeaseConfig{Disable: true}, DenyCache: DenyCacheConfig{Disable: true}})
	timeout := c.timeout
	c.drive(16, 100*time.Millisecond, PerSecond(1_000_000), nil)
	conns := c.connections(t, 0)
	c.px[0].Latency(t, toxitest.Downstream, timeout/2, 0)
	// A storm: every other call gives up after 5 ms, long before the
	// slow node answers.
	const cancelAfter = 5 * time.Millisecond
	mk := func(i int) (context.Context, context.CancelFunc) {
		if i%2 == 0 {
			return context.Background(), func() {}
		}
		ctx, cancel := context.WithTimeout(context.Background(), cancelAfter)
		return ctx, cancel
	}
	got := c.drive(64, 1500*time.Millisecond, PerSecond(1_000_000), mk)
	ns := c.nodeStats(0)
	newConns := c.connections(t, 0) - conns
	t.Logf("%v; breaker opened %d, undecided %v, %d new connections", got, ns.Opened, ns.Undecided, newConns)
	if got.errs != 0 {
		t.Errorf("%d errors reached callers", got.errs)
	}
	if ns.Opened != 0 {
		t.Errorf("cancelled callers opened the slow node's breaker %d times", ns.Opened)
	}
	if ns.Undecided[ReasonCancelled] == 0 {
		t.Errorf("no answer counted as cancelled: %v", ns.Undecided)
	}
	if n := ns.Undecided[ReasonTimeout] + ns.Undecided[ReasonBreakerOpen] + ns.Undecided[ReasonTransport]; n != 0 {
		t.Errorf("%d answers blamed on the node: %v", n, ns.Undecided)
	}
	// The round trips in flight grow with the latency, up to conc, and
	// each has its connection; none is cut by a leaving caller.
	if max := int64(c.nodeStats(0).MaxInFlight); newConns > max {
		t.Errorf("%d new connections during the storm, want at most %d", newConns, max)
	}
	// A call whose context ended must come back at once: 5 ms plus the
	// scheduling slack of a loaded machine, far below the node's 50 ms.
	ctx, cancel := context.WithTimeout(context.Background(), cancelAfter)
	t0 := time.Now()
	r, err := c.lim.Allow(ctx, c.keys[0][0], PerSecond(1_000_000))
	el := time.Since(t0)
	cancel()
	if err != nil || r.Source != SourceFallback || el > timeout/4 {
		t.Errorf("Allow with a context of %v on a node 50 ms away = %v, %v after %v; want the fallback within %v", cancelAfter, r.Source, err, el, timeout/4)
	}
}

// TestSickNodeConnectionsBounded: a node whose replies come after 2 ×
// Timeout is failed over, and the Limiter opens no more than a pool's
// worth of connections to it per OpenTimeout, with batching on and off.
func TestSickNodeConnectionsBounded(t *testing.T) {
	for _, batch := range []bool{true, false} {
		t.Run(fmt.Sprintf("batch=%v", batch), func(t *testing.T) {
			c := newToxicCluster(t, Config{Batch: BatchConfig{Disable: !batch}, Lease: LeaseConfig{Disable: true}})
			timeout, open := c.timeout, c.open
			c.drive(64, 100*time.Millisecond, PerSecond(1_000_000), nil)
			conns := c.connections(t, 0)
			c.px[0].Latency(t, toxitest.Downstream, 2*timeout, 0)
			const d = 2 * time.Second
			got := c.drive(64, d, PerSecond(1_000_000), nil)
			newConns := c.connections(t, 0) - conns
			ns := c.nodeStats(0)
			pool := int64(c.nodeStats(0).Pool)
			bound := pool * int64((d+open-1)/open)
			t.Logf("%v; breaker opened %d, undecided %v; %d new connections in %v (bound %d: pool %d per OpenTimeout %v)", got, ns.Opened, ns.Undecided, newConns, d, bound, pool, open)
			if got.errs != 0 {
				t.Errorf("%d errors reached callers", got.errs)
			}
			if ns.Opened == 0 {
				t.Errorf("a node at 2 × Timeout was never failed over")
			}
			if newConns > bound {
				t.Errorf("%d new connections to the sick node in %v, want <= %d", newConns, d, bound)
			}
			if share := got.notRemote(1) + got.notRemote(2); share > 0.002 {
				t.Errorf("healthy nodes: %.2f%% of answers not from Redis", 100*share)
			}
		})
	}
}

// TestLostReplyNotRerun: replies lost on the way back (the script ran) are
// never followed by a second execution of the same decision: Redis runs
// exactly one script per round trip the Limiter counts.
func TestLostReplyNotRerun(t *testing.T) {
	c := newToxicCluster(t, Config{Lease: LeaseConfig{Disable: true}, DenyCache: DenyCacheConfig{Disable: true}})
	rdb := c.srv[0].Client(t)
	before, calls := redistest.ScriptCalls(t, rdb), c.nodeStats(0).Calls
	c.px[0].Add(t, "timeout", toxitest.Downstream, map[string]any{"timeout": 0})
	for i := range 10 {
		r, err := c.lim.Allow(context.Background(), c.keys[0][i], PerHour(100))
		if err != nil || r.Source != SourceFallback {
			t.Fatalf("Allow with the reply lost = %v, %v; want the fallback", r.Source, err)
		}
	}
	c.px[0].Reset()
	time.Sleep(100 * time.Millisecond)
	ran, sent := redistest.ScriptCalls(t, rdb)-before, c.nodeStats(0).Calls-calls
	t.Logf("replies lost: %d round trips sent, %d scripts run", sent, ran)
	// At most one script per round trip: a round trip whose deadline
	// passed before its command was written (a stall on a loaded machine)
	// runs none, but none may run twice.
	if ran > sent || ran == 0 {
		t.Errorf("%d scripts ran for %d round trips whose replies were lost, want at most one each, and some", ran, sent)
	}
}

// TestStartWithSickNodes: New returns within its warm-up bound when one
// node refuses connections and another accepts them and never answers, and
// each node's keys are answered as its health says.
func TestStartWithSickNodes(t *testing.T) {
	srv := redistest.StartN(t, 2)
	hole := toxitest.New(t, srv[1].Addr())
	hole.Add(t, "timeout", toxitest.Upstream, map[string]any{"timeout": 0})
	refused := redistest.StartN(t, 1)[0]
	refusedAddr := refused.Addr()
	if err := refused.Stop(); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	lim, err := New(Config{Addrs: []string{srv[0].Addr(), hole.Addr(), refusedAddr}, Timeout: 100 * time.Millisecond})
	took := time.Since(t0)
	if err != nil {
		t.Fatal(err)
	}
	defer lim.Close()
	t.Logf("New with a refused and a black-holed node took %v", took)
	if took > warmUp+250*time.Millisecond {
		t.Errorf("New took %v, want at most the warm-up bound %v", took, warmUp)
	}
	want := map[string]Source{srv[0].Addr(): SourceRemote, hole.Addr(): SourceFallback, refusedAddr: SourceFallback}
	seen := map[string]bool{}
	for i := 0; len(seen) < 3 && i < 10_000; i++ {
		k := fmt.Sprintf("start:%d", i)
		name := lim.NodeOf(k)
		t1 := time.Now()
		r, err := lim.Allow(context.Background(), k, PerMinute(10))
		el := time.Since(t1)
		if err != nil {
			t.Fatal(err)
		}
		if r.Source != want[name] {
			t.Errorf("key of %s answered by %v, want %v", name, r.Source, want[name])
		}
		if el > 150*time.Millisecond {
			t.Errorf("Allow for a key of %s took %v, want <= 1.5 × Timeout", name, el)
		}
		seen[name] = true
	}
}
