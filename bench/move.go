package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/hybridlimit/hybridlimit/hybrid"
	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
)

// -fault reshard and -fault scale-out move slots of the embedded cluster
// (-cluster) under the load, as its operators do, with redis-cli:
// reshard moves reshardSlots slots from the victim master to the next
// one; scale-out adds a fourth master (add-node) and rebalances a quarter
// of the slots onto it (rebalance --cluster-use-empty-masters). Before the
// run, fillKeys keys of fillBytes each are written over every slot, so
// that moving a slot moves keys and takes as long as on a cluster that
// holds data. Beside the load, redis_rate (one cluster client of go-redis's
// defaults, as in the comparison) is asked by moveProbeCallers goroutines
// for moveProbeKeys keys of the victim with the Zipf workload's limits;
// what it answers while the slots move is its side of the comparison.
const (
	faultReshard  = "reshard"
	faultScaleOut = "scale-out"

	reshardSlots     = 2000
	fillKeys         = 60_000
	fillBytes        = 64
	moveProbeCallers = 4
	moveProbeKeys    = 1000
	// scaleOutDuration is -fault scale-out's default -duration: the
	// rebalance takes about 8-10 s on the VM, and starts at a quarter.
	scaleOutDuration = 20 * time.Second
)

// clusterFaults are the values of -fault on a cluster (-cluster, embedded).
var clusterFaults = []string{faultFailover, faultReshard, faultScaleOut}

// movesSlots reports whether fault moves slots (reshard, scale-out).
func movesSlots(fault string) bool { return fault == faultReshard || fault == faultScaleOut }

// move runs the slot move of in.fault on the embedded cluster, on ctx,
// and records when it starts and ends.
func (in *injector) move(ctx context.Context) error {
	rc, i := in.cl.rc, in.victim
	if in.fault == faultReshard {
		to := rc.Masters[(i+1)%len(rc.Masters)]
		in.record(event{label: fmt.Sprintf("reshard %d slots %s → %s", reshardSlots, in.name, to.Addr())})
		if err := rc.Reshard(ctx, rc.Masters[i], to, reshardSlots); err != nil {
			return err
		}
	} else {
		in.record(event{label: "scale-out add-node", quiet: true})
		m, err := rc.AddMaster(ctx)
		if err != nil {
			return err
		}
		in.record(event{label: "scale-out rebalance onto " + m.Addr()})
		if err := rc.Rebalance(ctx); err != nil {
			return err
		}
	}
	in.record(event{label: "slots moved", back: true})
	return nil
}

// checkMove says what a slot move needs that is missing: the embedded
// cluster of redis-server processes, and redis-cli.
func checkMove(cl *cluster, fault string) error {
	if cl.rc == nil {
		return fmt.Errorf("bench: -fault %s moves slots of the embedded Redis Cluster of redis-server processes, and there is none here", fault)
	}
	if _, err := redistest.CLI(); err != nil {
		return fmt.Errorf("bench: -fault %s runs redis-cli --cluster (apt-get install redis-tools): %w", fault, err)
	}
	return nil
}

// duringMove is caller g of a slot move's probe: it asks for the keys in
// turn until ctx ends, and counts the calls that start while the slots
// move.
func (p *rateProbe) duringMove(ctx context.Context, g int, start time.Time, in *injector) {
	for i := g; ctx.Err() == nil; i += moveProbeCallers {
		t0 := time.Now()
		_, _, err := p.rr.allow(ctx, 0, 0, p.keys[i%len(p.keys)], p.limits)
		d, at := time.Since(t0), t0.Sub(start)
		from, to := time.Duration(in.hit.Load()), time.Duration(in.healed.Load())
		if from == 0 || at < from || (to != 0 && at > to) || ctx.Err() != nil {
			continue
		}
		p.mu.Lock()
		p.calls++
		record(p.lat, d)
		p.slowest = max(p.slowest, d)
		if err != nil {
			p.errs++
			p.lastErr = err
		}
		p.mu.Unlock()
	}
}

// rateKey is the Redis key of redis_rate's first Allow for key under
// limits (redisRateSystem.allow): the key alone when there is one limit.
func rateKey(key string, limits []hybrid.Limit) string {
	if len(limits) > 1 {
		key = limitKey(key, limits[0])
	}
	return "rate:" + key
}

// moveFigures fills the summary's figures of a slot move: how long it
// took (if it ended within the run, which lasted elapsed), and redis_rate's
// calls, errors, p99 and slowest call during it.
func moveFigures(sum *faultSummary, p *rateProbe, from, to, elapsed time.Duration) {
	if p == nil || from == 0 {
		return
	}
	if to > 0 && to <= elapsed {
		v := (to - from).Seconds()
		sum.MoveSeconds = &v
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	sum.RedisRateCalls, sum.RedisRateErrors = p.calls, p.errs
	sum.RedisRateP99us = quantileUs(p.lat, 99)
	sum.RedisRateSlowestMs = float64(p.slowest) / float64(time.Millisecond)
	if p.lastErr != nil {
		sum.RedisRateLastError = p.lastErr.Error()
	}
}

// printMove writes a slot move's figures after the timeline.
func printMove(w io.Writer, sum faultSummary) {
	if sum.MoveSeconds == nil {
		fmt.Fprintln(w, "the slots were still moving when the run ended")
	} else {
		fmt.Fprintf(w, "slots moved in %.2fs; hybridlimit's victim keys answered by the failure mode meanwhile: %s, errors to callers %d\n",
			*sum.MoveSeconds, pct(sum.FaultVictimPct), sum.Errors)
	}
	fmt.Fprintf(w, "redis_rate (%d callers, %d keys of the master) while the slots moved: %d calls, %d errors (%s), p99 %s, slowest %.0fms",
		moveProbeCallers, moveProbeKeys, sum.RedisRateCalls, sum.RedisRateErrors, share(sum.RedisRateErrors, sum.RedisRateCalls),
		latencyOr(sum.RedisRateP99us, "-"), sum.RedisRateSlowestMs)
	if sum.RedisRateLastError != "" {
		fmt.Fprintf(w, "; last error: %s", sum.RedisRateLastError)
	}
	fmt.Fprintln(w)
}
