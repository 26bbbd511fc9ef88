package hybrid

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
	"github.com/hybridlimit/hybridlimit/remote"
)

// The routine operations of a Redis Cluster, done by redis-cli on real
// clusters under load, with both ways a service builds the client it
// hands the Limiter: a reshard, a master added and the slots rebalanced
// onto it, a master killed and its replica promoted, and a replica taking
// over with CLUSTER FAILOVER. Each is a bounded run: the load stops when
// the operation has ended and settle has passed (kill: 2 s after the
// promotion), or after opLoadMax, whichever is first. About 90 s in all on
// 2 cores under -race, cluster starts and filling included.

// clusterClients are the two constructions: the options docs/deployment.md
// gives for a client made for the Limiter, and go-redis's defaults, as a
// service that already has a client passes it in.
var clusterClients = []struct {
	name  string
	build func(addrs []string) *redis.ClusterClient
}{
	{"bound", func(addrs []string) *redis.ClusterClient {
		return redis.NewClusterClient(remote.BoundClusterOptions(&redis.ClusterOptions{Addrs: addrs}))
	}},
	{"default", func(addrs []string) *redis.ClusterClient {
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	}},
}

const (
	opCallers   = 16
	opKeys      = 1000
	opLoadMax   = 40 * time.Second // no run goes on longer
	opCallsMax  = 2_000_000        // nor makes more calls
	opSettle    = 500 * time.Millisecond
	opFillKeys  = 60_000 // filler keys: moving a slot moves its keys
	opFillBytes = 64
)

// opLimits are every request's two limits: requests whose two keys are
// split by a migration happen, and every key is soon over its limit, so
// that Redis denies most requests and an admission beyond the limit would
// show.
var opLimits = []Limit{{Rate: 30, Period: time.Hour}, {Algorithm: FixedWindow, Rate: 50, Period: time.Hour}}

// opPhase is when an answer came: before the operation, during it, after.
type opPhase int

const (
	phaseBefore opPhase = iota
	phaseDuring
	phaseAfter
	numPhases
)

// opLoad is the load of one run and what it saw.
type opLoad struct {
	lim      *Limiter
	phase    atomic.Int32
	answers  [numPhases][numSources]atomic.Int64
	errs     atomic.Int64
	slowest  atomic.Int64 // ns
	admitted [opKeys]atomic.Int64
	calls    atomic.Int64
	// victim marks the keys of the master an operation kills; healthy
	// counts the failure-mode answers for the others'.
	victim  [opKeys]bool
	healthy atomic.Int64
	// lastFailure is when the last answer of the failure mode came, ns
	// since start.
	lastFailure atomic.Int64
	start       time.Time
}

func opKey(i int) string { return "op:" + strconv.Itoa(i) }

// run drives the load until stop is closed (or the bounds are reached).
func (o *opLoad) run(stop <-chan struct{}) {
	ctx := context.Background()
	var wg sync.WaitGroup
	end := time.Now().Add(opLoadMax)
	for w := range opCallers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w * 61; o.calls.Add(1) <= opCallsMax && time.Now().Before(end); i++ {
				select {
				case <-stop:
					return
				default:
				}
				k := i % opKeys
				t0 := time.Now()
				r, err := o.lim.Allow(ctx, opKey(k), opLimits...)
				d := time.Since(t0)
				for s := o.slowest.Load(); int64(d) > s && !o.slowest.CompareAndSwap(s, int64(d)); s = o.slowest.Load() {
				}
				if err != nil {
					o.errs.Add(1)
					continue
				}
				o.answers[o.phase.Load()][r.Source].Add(1)
				if failureMode(r.Source) {
					o.lastFailure.Store(int64(time.Since(o.start)))
					if !o.victim[k] {
						o.healthy.Add(1)
					}
				}
				if r.Allowed && (r.Source == SourceRemote || r.Source == SourceLease) {
					o.admitted[k].Add(1)
				}
			}
		}()
	}
	wg.Wait()
}

func failureMode(s Source) bool {
	return s == SourceFallback || s == SourceFailOpen || s == SourceFailClosed
}

// opReport is what one run measured, one row of the closing note.
type opReport struct {
	op, client      string
	took            time.Duration // the operation, start to end
	answers         [numPhases][numSources]int64
	errs            int64
	opened          map[string]int64 // breaker openings by master
	slowest         time.Duration
	overLimit       int
	promotedToBack  time.Duration // kill: last failure-mode answer after the promotion (<= 0: none after it)
	clusterDown     time.Duration // kill: how long a healthy master reported cluster_state:fail
	healthyFailure  int64         // kill: failure-mode answers for the healthy masters' keys
	ran, remote     int64         // scripts run (INFO commandstats) and answers from Redis
	rejected        int64         // script calls Redis rejected (MOVED, ASK, TRYAGAIN, CLUSTERDOWN)
	undecidedReason map[Reason]int64
}

func (r opReport) String() string {
	sum := func(p opPhase) (all, fail int64) {
		for s, n := range r.answers[p] {
			all += n
			if failureMode(Source(s)) {
				fail += n
			}
		}
		return
	}
	all, fail := sum(phaseDuring)
	var b strings.Builder
	fmt.Fprintf(&b, "%s, %s client: operation %v; during it %d answers, %d from the failure mode (%.2f%%)", r.op, r.client, r.took.Round(time.Millisecond), all, fail, pct(fail, all))
	for p, name := range []string{"before", "during", "after"} {
		fmt.Fprintf(&b, "; %s %v", name, r.answers[p])
	}
	fmt.Fprintf(&b, "; breaker openings %v; %d errors; slowest call %v; %d keys over the limit", r.opened, r.errs, r.slowest.Round(time.Millisecond), r.overLimit)
	if r.ran >= 0 {
		fmt.Fprintf(&b, "; scripts run %d, answers from Redis %d, script calls rejected %d", r.ran, r.remote, r.rejected)
	}
	if r.op == "kill" {
		fmt.Fprintf(&b, "; last failure-mode answer %v after the promotion; a healthy master in cluster_state:fail for %v, its keys answered by the failure mode %d times",
			r.promotedToBack.Round(time.Millisecond), r.clusterDown.Round(time.Millisecond), r.healthyFailure)
	}
	fmt.Fprintf(&b, "; undecided %v", r.undecidedReason)
	return b.String()
}

func pct(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

// scriptStats sums, over the running members, the script calls Redis ran
// to the end without an error (calls - failed_calls of FCALL and EVALSHA:
// "Function not found" and NOSCRIPT are failed calls) and those it
// rejected before running them (MOVED, ASK, TRYAGAIN, CLUSTERDOWN).
func scriptStats(t *testing.T, c *redistest.Cluster) (ran, rejected int64) {
	t.Helper()
	for _, s := range c.Servers() {
		if !s.Running() {
			continue
		}
		info, err := s.Client(t).Info(context.Background(), "commandstats").Result()
		if err != nil {
			t.Fatalf("INFO commandstats on %s: %v", s.Addr(), err)
		}
		for _, line := range strings.Split(info, "\n") {
			line = strings.TrimSpace(line)
			if !strings.HasPrefix(line, "cmdstat_fcall:") && !strings.HasPrefix(line, "cmdstat_evalsha:") {
				continue
			}
			f := map[string]int64{}
			for _, kv := range strings.Split(line[strings.IndexByte(line, ':')+1:], ",") {
				k, v, _ := strings.Cut(kv, "=")
				n, _ := strconv.ParseFloat(v, 64)
				f[k] = int64(n)
			}
			ran += f["calls"] - f["failed_calls"]
			rejected += f["rejected_calls"]
		}
	}
	return ran, rejected
}

// clusterOp runs op on cluster c under load through a Limiter on a client
// built by build, and checks what the issue asks: no error reaches a
// caller, no healthy master's breaker opens, at most 0.5 % of the answers
// during the operation come from the failure mode, no key is admitted
// beyond its limit, and every script ran at most once (INFO commandstats,
// where no member died). op returns, for a failover, the address of the
// master that died and when its replica was promoted.
func clusterOp(t *testing.T, c *redistest.Cluster, name, client string, build func([]string) *redis.ClusterClient,
	op func(ctx context.Context) (dead string, promoted time.Time, err error)) opReport {
	return clusterOpIn(t, c, Layout{}, name, client, build, op)
}

// clusterOpIn is clusterOp with the Limiter in layout l.
func clusterOpIn(t *testing.T, c *redistest.Cluster, l Layout, name, client string, build func([]string) *redis.ClusterClient,
	op func(ctx context.Context) (dead string, promoted time.Time, err error)) opReport {
	t.Helper()
	const timeout = 200 * time.Millisecond
	rdb := build(c.Addrs())
	t.Cleanup(func() { rdb.Close() })
	lim, err := New(Config{
		Nodes:   []Node{{Name: "cluster", Client: rdb}},
		Layout:  l,
		Timeout: timeout,
		// Every request goes to Redis: an exhausted key is denied by
		// Redis, not by the denial cache, so that an admission beyond
		// the limit during a move would show.
		DenyCache: DenyCacheConfig{Disable: true},
		// And one script call per request, so that the scripts run can
		// be counted against the answers.
		Lease: LeaseConfig{Disable: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lim.Close() })
	ctx := context.Background()
	o := &opLoad{lim: lim, start: time.Now()}
	for k := range o.victim {
		o.victim[k] = c.MasterOf(t, "{"+opKey(k)+"}") == 0
	}
	ran0, rej0 := scriptStats(t, c)
	// How long a healthy master (the last) says the cluster is down.
	var down time.Duration
	watchDone := make(chan struct{})
	watchStop := make(chan struct{})
	go func() {
		defer close(watchDone)
		healthy := c.Masters[len(c.Masters)-1].Client(t)
		var since time.Time
		for {
			select {
			case <-watchStop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			info, err := healthy.ClusterInfo(ctx).Result()
			failed := err == nil && strings.Contains(info, "cluster_state:fail")
			switch {
			case failed && since.IsZero():
				since = time.Now()
			case !failed && !since.IsZero():
				down += time.Since(since)
				since = time.Time{}
			}
		}
	}()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { o.run(stop); close(done) }()
	// A stall of half the Timeout (other tests' servers, -race on 2
	// cores) times round trips out however the Limiter routes, and opens
	// breakers with no fault of the cluster's.
	stalls := redistest.WatchStalls()
	time.Sleep(300 * time.Millisecond)
	o.phase.Store(int32(phaseDuring))
	t0 := time.Now()
	dead, promoted, err := op(ctx)
	took := time.Since(t0)
	if err != nil {
		close(stop)
		<-done
		stalls()
		t.Fatal(err)
	}
	settle := opSettle
	if !promoted.IsZero() {
		settle = 2 * time.Second
	}
	time.Sleep(settle / 2)
	o.phase.Store(int32(phaseAfter))
	time.Sleep(settle / 2)
	close(stop)
	<-done
	stall := stalls()
	close(watchStop)
	<-watchDone
	elapsed := time.Since(o.start)

	rep := opReport{op: name, client: client, took: took, errs: o.errs.Load(), slowest: time.Duration(o.slowest.Load()), opened: map[string]int64{}, ran: -1}
	for p := range numPhases {
		for s := range numSources {
			rep.answers[p][s] = o.answers[p][s].Load()
		}
	}
	st := lim.Stats()
	rep.undecidedReason = st.Undecided
	for _, sh := range st.Nodes[0].Shards {
		if sh.Opened > 0 {
			rep.opened[sh.Name] = sh.Opened
		}
	}
	// A token bucket of 30 an hour refills one unit every 2 minutes.
	most := int64(opLimits[0].Rate) + int64(math.Ceil(elapsed.Hours()*float64(opLimits[0].Rate)))
	for k := range o.admitted {
		if n := o.admitted[k].Load(); n > most {
			rep.overLimit++
			t.Errorf("key %s: %d admitted by Redis, limit %d", opKey(k), n, most)
		}
	}
	if !promoted.IsZero() {
		rep.promotedToBack = time.Duration(o.lastFailure.Load()) - promoted.Sub(o.start)
		rep.clusterDown, rep.healthyFailure = down, o.healthy.Load()
	}
	if dead == "" {
		ran1, rej1 := scriptStats(t, c)
		rep.ran, rep.rejected = ran1-ran0, rej1-rej0
		rep.remote = st.Decisions[SourceRemote]
	}
	t.Log(rep)
	// Timeouts during a stall of the machine say nothing of the cluster:
	// the breaker and failure-mode bounds then hold only where no answer
	// timed out.
	stalled := stall >= timeout/2 && st.Undecided[ReasonTimeout] > 0
	if stalled {
		t.Logf("the machine stalled up to %v (Timeout %v): breaker openings and failure-mode answers not judged", stall, timeout)
	}

	if rep.errs != 0 {
		t.Errorf("%d errors reached callers", rep.errs)
	}
	for m, n := range rep.opened {
		if m != dead && !stalled {
			t.Errorf("the breaker of master %s, which stayed up, opened %d times", m, n)
		}
	}
	if dead == "" {
		var all, fail int64
		for s, n := range rep.answers[phaseDuring] {
			all += n
			if failureMode(Source(s)) {
				fail += n
			}
		}
		if all == 0 || pct(fail, all) > 0.5 && !stalled {
			t.Errorf("%d of %d answers during the operation from the failure mode, want <= 0.5%%", fail, all)
		}
		// A routing answer (MOVED, ASK, TRYAGAIN) is never an error of
		// the server's.
		if n := st.Undecided[ReasonServer]; n != 0 {
			t.Errorf("%d answers from the failure mode for a server error", n)
		}
		// Every answer from Redis is a script that ran, and no script
		// ran twice: a run beyond the answers is one whose answer was
		// lost (a timeout), which undecided counts.
		lost := st.Undecided[ReasonTimeout] + st.Undecided[ReasonTransport]
		if rep.ran < rep.remote || rep.ran > rep.remote+lost {
			t.Errorf("scripts run %d times for %d answers from Redis (%d answers lost in flight)", rep.ran, rep.remote, lost)
		}
	} else if rep.promotedToBack > time.Second {
		t.Errorf("a failure-mode answer %v after the promotion, want none after 1s", rep.promotedToBack)
	}
	return rep
}

// TestClusterReshardUnderLoad: redis-cli --cluster reshard moves 2,000
// slots, keys and all, from one master to another while 16 callers ask;
// with the bound client, in the compact layout too (a moved slot moves
// whole hashes of its bucket).
func TestClusterReshardUnderLoad(t *testing.T) {
	reshard := func(ctx context.Context, c *redistest.Cluster) error {
		return c.Reshard(ctx, c.Masters[0], c.Masters[1], 2000)
	}
	moveUnderLoad(t, "reshard", reshard)
	t.Run("client=bound/compact", func(t *testing.T) {
		redistest.RequireCLI(t)
		c := redistest.StartCluster(t, 3, 0)
		if err := c.Fill(context.Background(), opFillKeys, opFillBytes); err != nil {
			t.Fatal(err)
		}
		clusterOpIn(t, c, Layout{Compact: true, Keys: opKeys}, "reshard", "bound", clusterClients[0].build, func(ctx context.Context) (string, time.Time, error) {
			return "", time.Time{}, reshard(ctx, c)
		})
	})
}

// TestClusterScaleOutUnderLoad: a fourth master joins (redis-cli --cluster
// add-node) and takes a quarter of the slots (rebalance
// --cluster-use-empty-masters) while 16 callers ask. It starts with no
// function library: the first call it gets loads it.
func TestClusterScaleOutUnderLoad(t *testing.T) {
	moveUnderLoad(t, "scale-out", func(ctx context.Context, c *redistest.Cluster) error {
		if _, err := c.AddMaster(ctx); err != nil {
			return err
		}
		return c.Rebalance(ctx)
	})
}

// moveUnderLoad runs move, which moves slots of a 3-master cluster holding
// opFillKeys filler keys, under clusterOp's load, once per client
// construction.
func moveUnderLoad(t *testing.T, name string, move func(context.Context, *redistest.Cluster) error) {
	redistest.RequireCLI(t)
	for _, cc := range clusterClients {
		t.Run("client="+cc.name, func(t *testing.T) {
			c := redistest.StartCluster(t, 3, 0)
			if err := c.Fill(context.Background(), opFillKeys, opFillBytes); err != nil {
				t.Fatal(err)
			}
			clusterOp(t, c, name, cc.name, cc.build, func(ctx context.Context) (string, time.Time, error) {
				return "", time.Time{}, move(ctx, c)
			})
		})
	}
}

// TestClusterMasterKilledUnderLoad: a master is killed (node timeout 1 s)
// and its replica promoted a few seconds later, while 16 callers ask. With
// cluster-require-full-coverage yes (the default) every master answers
// CLUSTERDOWN from when the cluster marks the master failed until the
// promotion: those answers come from the failure mode, and count against
// no breaker. With it no, the healthy masters go on serving their keys
// (bound client only: the client makes no difference here). Within 1 s of
// the promotion every answer is Redis's again.
func TestClusterMasterKilledUnderLoad(t *testing.T) {
	type variant struct {
		name     string
		build    func([]string) *redis.ClusterClient
		coverage string
	}
	var variants []variant
	for _, cc := range clusterClients {
		variants = append(variants, variant{"client=" + cc.name, cc.build, "yes"})
	}
	variants = append(variants, variant{"client=bound/full-coverage=no", clusterClients[0].build, "no"})
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			c := redistest.StartCluster(t, 3, 1, redistest.WithArgs("--cluster-require-full-coverage", v.coverage))
			rep := clusterOp(t, c, "kill", strings.TrimPrefix(v.name, "client="), v.build, func(ctx context.Context) (string, time.Time, error) {
				dead := c.Masters[0].Addr()
				if err := c.Masters[0].Kill(); err != nil {
					return "", time.Time{}, err
				}
				replica := c.Replicas[0][0].Client(t)
				for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
					if info, err := replica.Info(ctx, "replication").Result(); err == nil && strings.Contains(info, "role:master") {
						return dead, time.Now(), nil
					}
				}
				return "", time.Time{}, fmt.Errorf("replica %s not promoted within 15s", c.Replicas[0][0].Addr())
			})
			if v.coverage == "no" && (rep.clusterDown != 0 || rep.healthyFailure != 0) {
				t.Errorf("full coverage not required: the healthy masters down %v, %d failure-mode answers for their keys; want none", rep.clusterDown, rep.healthyFailure)
			}
		})
	}
}

// TestClusterManualFailoverUnderLoad: CLUSTER FAILOVER on a replica while
// 16 callers ask: the master hands over (its clients paused while the
// replica catches up), and answers MOVED afterwards.
func TestClusterManualFailoverUnderLoad(t *testing.T) {
	for _, cc := range clusterClients {
		t.Run("client="+cc.name, func(t *testing.T) {
			c := redistest.StartCluster(t, 3, 1)
			clusterOp(t, c, "failover", cc.name, cc.build, func(ctx context.Context) (string, time.Time, error) {
				return "", time.Time{}, c.Failover(ctx, c.Replicas[0][0])
			})
		})
	}
}
