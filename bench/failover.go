package main

import (
	"cmp"
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

// -fault failover's polls: of the replica's role, and of redis_rate.
const (
	promotionPoll = 10 * time.Millisecond
	probePoll     = 5 * time.Millisecond
	probeTimeout  = 250 * time.Millisecond // bounds one call of either
)

// clusterOwners returns the masters' addresses, in the order of cl.opts,
// and the index of a key's master, from CLUSTER SLOTS; it checks
// remote.KeySlot against CLUSTER KEYSLOT on the keys of check.
func clusterOwners(ctx context.Context, cl *cluster, check []string) ([]string, func(string) int, error) {
	c := newClient(cl.opts[0], 1)
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, housekeepingTimeout)
	defer cancel()
	//lint:ignore SA1019 CLUSTER SHARDS needs Redis 7; CLUSTER SLOTS answers on every version we support
	slots, err := c.ClusterSlots(ctx).Result()
	if err != nil {
		return nil, nil, fmt.Errorf("bench: CLUSTER SLOTS: %w", err)
	}
	names := make([]string, len(cl.opts))
	for i, o := range cl.opts {
		names[i] = o.Addr
	}
	bySlot := slices.Repeat([]int{-1}, remote.NumSlots)
	for _, r := range slots {
		if len(r.Nodes) == 0 {
			continue
		}
		m := slices.Index(names, r.Nodes[0].Addr)
		if m < 0 {
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

// recovery is, since the start (-1: none), the victim's keys' first answer
// from Redis to a request sent after the kill, and last failure-mode answer.
type recovery struct {
	firstRemote, lastFailure time.Duration
}

// note counts an answer from src asked at t0 (zero: not timed); killed is
// when the master was killed, since start (0: not yet).
func (rc *recovery) note(src hybrid.Source, t0, start time.Time, killed time.Duration) {
	switch {
	case killed == 0:
	case failureMode(src):
		rc.lastFailure = time.Since(start)
	case src == hybrid.SourceRemote && rc.firstRemote < 0 && !t0.IsZero() && t0.Sub(start) > killed:
		rc.firstRemote = time.Since(start)
	}
}

// merge keeps the earlier firstRemote and the later lastFailure.
func (rc *recovery) merge(o recovery) {
	if o.firstRemote >= 0 && (rc.firstRemote < 0 || o.firstRemote < rc.firstRemote) {
		rc.firstRemote = o.firstRemote
	}
	rc.lastFailure = max(rc.lastFailure, o.lastFailure)
}

// rateProbe is redis_rate asking for keys of the victim master during a
// cluster fault (doc.go). A nil probe (other faults) does nothing.
type rateProbe struct {
	rr     *redisRateSystem
	keys   []string
	limits []hybrid.Limit

	mu          sync.Mutex // a slot move's counts, calls to lastErr
	calls, errs int64
	lat         *hdrhistogram.Histogram
	slowest     time.Duration
	lastErr     error
	back        time.Duration // failover: since the start, the first success after the kill; 0: none
}

// probeLimits are the failover probe's limits, one that never denies.
var probeLimits = []hybrid.Limit{hybrid.PerSecond(1_000_000_000)}

// newRateProbe builds the probe (nil for other faults) on keys of the
// victim; a slot move's probe asks with limits. The first key must pass.
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

// run runs the probe until ctx ends, or for failover the first success.
func (p *rateProbe) run(ctx context.Context, start time.Time, in *injector) {
	if p == nil {
		return
	}
	if in.fault != faultFailover {
		var wg sync.WaitGroup
		for g := range moveProbeCallers {
			wg.Go(func() { p.duringMove(ctx, g, start, in) })
		}
		wg.Wait()
		return
	}
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
			p.back = time.Since(start)
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

// failoverTimes fills the summary's failover figures (ms since killed) and
// returns the events with those times added, in time order.
func failoverTimes(sum *faultSummary, events []event, rec recovery, p *rateProbe, killed, promoted time.Duration) []event {
	if killed == 0 {
		return events
	}
	since := func(at time.Duration) *float64 { return msPtr(at - killed) }
	if promoted > 0 {
		sum.PromotedMs = since(promoted)
	}
	if rec.firstRemote >= 0 {
		sum.RemoteMs = since(rec.firstRemote)
		events = append(events, event{at: rec.firstRemote, label: "hybridlimit: its keys from Redis again", quiet: true})
	}
	if rec.lastFailure >= 0 {
		sum.LastFailureMs = since(rec.lastFailure)
	}
	if p.back > 0 {
		sum.RedisRateMs = since(p.back)
		events = append(events, event{at: p.back, label: "redis_rate: success again", quiet: true})
	}
	slices.SortStableFunc(events, func(a, b event) int { return cmp.Compare(a.at, b.at) })
	return events
}

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

// failover kills the victim master and records its replica's promotion.
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
