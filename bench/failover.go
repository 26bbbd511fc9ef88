package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redis/go-redis/v9"

	"github.com/hybridlimit/hybridlimit/hybrid"
	"github.com/hybridlimit/hybridlimit/remote"
)

// -fault failover kills a master of the embedded cluster (-cluster) and
// times what follows: the replica's promotion, hybridlimit's first answer
// from Redis for the master's keys, and redis_rate's first success on a
// key of the master.
const (
	// promotionPoll is how often the injector asks the replica whether it
	// is a master yet; probePoll how often the redis_rate probe retries.
	promotionPoll = 10 * time.Millisecond
	probePoll     = 5 * time.Millisecond
	// probeTimeout bounds one redis_rate call of the probe.
	probeTimeout = 250 * time.Millisecond
)

// clusterOwners reads which master serves each slot of the embedded
// cluster (CLUSTER SLOTS) and returns the masters' addresses, in the order
// of cl.opts, and the index of the master that serves a key. It checks
// remote.KeySlot against CLUSTER KEYSLOT on the keys of check.
func clusterOwners(ctx context.Context, cl *cluster, check []string) ([]string, func(string) int, error) {
	c := newClient(cl.opts[0], 1)
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, housekeepingTimeout)
	defer cancel()
	slots, err := c.ClusterSlots(ctx).Result()
	if err != nil {
		return nil, nil, fmt.Errorf("bench: CLUSTER SLOTS: %w", err)
	}
	var names []string
	index := map[string]int{}
	for i, o := range cl.opts {
		names = append(names, o.Addr)
		index[o.Addr] = i
	}
	bySlot := make([]int, remote.NumSlots)
	for i := range bySlot {
		bySlot[i] = -1
	}
	for _, r := range slots {
		if len(r.Nodes) == 0 {
			continue
		}
		m, ok := index[r.Nodes[0].Addr]
		if !ok {
			return nil, nil, fmt.Errorf("bench: CLUSTER SLOTS: slots %d-%d served by %s, not one of the masters %s", r.Start, r.End, r.Nodes[0].Addr, strings.Join(names, ", "))
		}
		for sl := max(r.Start, 0); sl <= min(r.End, remote.NumSlots-1); sl++ {
			bySlot[sl] = m
		}
	}
	if i := slices.Index(bySlot, -1); i >= 0 {
		return nil, nil, fmt.Errorf("bench: CLUSTER SLOTS: slot %d served by no master", i)
	}
	for _, k := range check {
		want, err := c.ClusterKeySlot(ctx, k).Result()
		if err != nil {
			return nil, nil, fmt.Errorf("bench: CLUSTER KEYSLOT: %w", err)
		}
		if got := remote.KeySlot(k); int64(got) != want {
			return nil, nil, fmt.Errorf("bench: slot of %s: bench computes %d, Redis says %d", k, got, want)
		}
	}
	return names, func(key string) int { return bySlot[remote.KeySlot(key)] }, nil
}

// recovery is what one goroutine of a failover run saw of the victim's
// keys after the kill, as times since the start; -1 for none.
type recovery struct {
	firstRemote time.Duration // the first answer from Redis to a request sent after the kill
	lastFailure time.Duration // the last answer from the failure mode
}

// note counts one answer r for a victim's key, asked at t0 (zero when
// the call was not timed) by a run that started at start; killed is
// when the master was killed (0: not yet).
func (rc *recovery) note(src hybrid.Source, t0, start time.Time, killed time.Duration) {
	if killed == 0 {
		return
	}
	switch {
	case failureMode(src):
		rc.lastFailure = time.Since(start)
	case src == hybrid.SourceRemote && rc.firstRemote < 0 && !t0.IsZero() && t0.Sub(start) > killed:
		rc.firstRemote = time.Since(start)
	}
}

// rateProbe is redis_rate beside hybridlimit during a cluster fault,
// asking for keys of the victim master on a cluster client of go-redis's
// defaults, as in the comparison: for failover, one key every probePoll
// from the kill until its first success (back); for a slot move,
// moveProbeKeys keys by moveProbeCallers goroutines, the calls started
// while the slots move counted. A nil probe (other faults) does nothing.
type rateProbe struct {
	rr     *redisRateSystem
	keys   []string
	limits []hybrid.Limit

	mu      sync.Mutex
	calls   int64
	errs    int64
	lat     *hdrhistogram.Histogram
	slowest time.Duration
	lastErr error
	back    time.Duration // failover: since the start, when the first call after the kill succeeded; 0: not yet
}

// probeLimits are the failover probe's limits, one that never denies.
var probeLimits = []hybrid.Limit{hybrid.PerSecond(1_000_000_000)}

// newRateProbe builds the probe for fault (nil for the others): keys
// whose redis_rate keys are on the victim, the first asked once, which
// must succeed. A slot move's probe asks with limits, the Zipf keys'.
func newRateProbe(ctx context.Context, e *env, owner func(string) int, victim int, limits []hybrid.Limit) (*rateProbe, error) {
	p := &rateProbe{limits: limits, lat: newHist()}
	n, callers := moveProbeKeys, moveProbeCallers
	switch {
	case e.s.fault == faultFailover:
		p.limits, n, callers = probeLimits, 1, 1
	case !movesSlots(e.s.fault):
		return nil, nil
	}
	for i := 0; len(p.keys) < n; i++ {
		if k := keyPrefix() + "probe:" + strconv.Itoa(i); owner(rateKey(k, p.limits)) == victim {
			p.keys = append(p.keys, k)
		}
	}
	p.rr = newRedisRate(e.cl, callers)
	if _, _, err := p.rr.allow(ctx, 0, 0, p.keys[0], p.limits); err != nil {
		return nil, errors.Join(fmt.Errorf("bench: redis_rate on the cluster: %w", err), p.close())
	}
	return p, nil
}

// start runs the probe until ctx ends, the fault's times read from in.
// The channel closes when it has stopped.
func (p *rateProbe) start(ctx context.Context, start time.Time, in *injector) <-chan struct{} {
	done := make(chan struct{})
	if p == nil {
		close(done)
		return done
	}
	var wg sync.WaitGroup
	if in.fault == faultFailover {
		wg.Go(func() { p.untilBack(ctx, start, in) })
	} else {
		for g := range moveProbeCallers {
			wg.Go(func() { p.duringMove(ctx, g, start, in) })
		}
	}
	go func() { wg.Wait(); close(done) }()
	return done
}

// untilBack asks for the key every probePoll from the kill until a call
// made after it succeeds, each call within probeTimeout.
func (p *rateProbe) untilBack(ctx context.Context, start time.Time, in *injector) {
	for sleep(ctx, probePoll) {
		killed := time.Duration(in.hit.Load())
		if killed == 0 {
			continue
		}
		at := time.Since(start)
		cctx, cancel := context.WithTimeout(ctx, probeTimeout)
		_, _, err := p.rr.allow(cctx, 0, 0, p.keys[0], p.limits)
		cancel()
		if err == nil && at > killed {
			p.mu.Lock()
			p.back = time.Since(start)
			p.mu.Unlock()
			return
		}
	}
}

func (p *rateProbe) close() error {
	if p == nil {
		return nil
	}
	return p.rr.close()
}

// failoverTimes fills the summary's failover figures, as milliseconds
// since the kill (at killed since the start): the promotion (the event
// that brought the node back), hybridlimit's first answer from Redis and
// its last failure-mode answer for the victim's keys, redis_rate's first
// success. It returns the events with those times added, in time order.
func failoverTimes(sum *faultSummary, events []event, recov []recovery, p *rateProbe, killed time.Duration) []event {
	if killed == 0 {
		return events
	}
	ms := func(d time.Duration) *float64 {
		v := float64(d-killed) / float64(time.Millisecond)
		return &v
	}
	for _, ev := range events {
		if ev.back {
			sum.PromotedMs = ms(ev.at)
		}
	}
	var first, last time.Duration = -1, -1
	for _, r := range recov {
		if r.firstRemote >= 0 && (first < 0 || r.firstRemote < first) {
			first = r.firstRemote
		}
		last = max(last, r.lastFailure)
	}
	if first >= 0 {
		sum.RemoteMs = ms(first)
		events = append(events, event{at: first, label: "hybridlimit: its keys from Redis again", quiet: true})
	}
	if last >= 0 {
		sum.LastFailureMs = ms(last)
	}
	if b := p.back; b > 0 {
		sum.RedisRateMs = ms(b)
		events = append(events, event{at: b, label: "redis_rate: success again", quiet: true})
	}
	slices.SortStableFunc(events, func(a, b event) int { return int(a.at - b.at) })
	return events
}

// printFailover writes the failover's figures after the timeline.
func printFailover(w io.Writer, sum faultSummary) {
	since := func(v *float64, what string) string {
		if v == nil {
			return what + " not within the run"
		}
		return fmt.Sprintf("%s %.0fms after the kill", what, *v)
	}
	fmt.Fprintf(w, "failover: %s; %s", since(sum.PromotedMs, "replica promoted"), since(sum.RemoteMs, "hybridlimit's first answer from Redis for the master's keys"))
	if sum.LastFailureMs != nil {
		fmt.Fprintf(w, " (its last from the failure mode %.0fms after)", *sum.LastFailureMs)
	}
	fmt.Fprintf(w, "; %s\n", since(sum.RedisRateMs, "redis_rate's first success on a key of the master"))
}

// failover kills the victim master and records its replica's promotion,
// seen by polling it every promotionPoll, unless ctx ends first.
func (in *injector) failover(ctx context.Context) error {
	replica := in.cl.rc.Replicas[in.victim][0].Addr()
	if err := in.cl.rc.Masters[in.victim].Kill(); err != nil {
		return err
	}
	in.record(event{label: fmt.Sprintf("failover %s killed (replica %s)", in.name, replica)})
	c := newClient(&redis.Options{Addr: replica, DialTimeout: probeTimeout, ReadTimeout: probeTimeout, WriteTimeout: probeTimeout}, 1)
	defer c.Close()
	for sleep(ctx, promotionPoll) {
		qctx, cancel := context.WithTimeout(ctx, probeTimeout)
		info, err := c.Info(qctx, "replication").Result()
		cancel()
		if err == nil && strings.Contains(info, "role:master") {
			in.record(event{label: "promoted " + replica, back: true})
			return nil
		}
	}
	return nil
}
