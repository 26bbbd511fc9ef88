package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/hybridlimit/hybridlimit/hybrid"
	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
)

// -fault reshard and scale-out move slots with redis-cli (doc.go).
const (
	faultReshard  = "reshard"
	faultScaleOut = "scale-out"

	reshardSlots = 2000 // moved by reshard to the next master
	// fillKeys keys of fillBytes go over every slot first: a move moves data.
	fillKeys  = 60_000
	fillBytes = 64
	// During a move redis_rate asks from moveProbeCallers goroutines for
	// moveProbeKeys keys of the victim.
	moveProbeCallers = 4
	moveProbeKeys    = 1000
	// scaleOutDuration is scale-out's default -duration: its rebalance
	// takes 8-10s and starts at a third.
	scaleOutDuration = 20 * time.Second
)

// clusterFaults are the values of -fault with -cluster.
var clusterFaults = []string{faultFailover, faultReshard, faultScaleOut}

// movesSlots reports whether fault moves slots (reshard, scale-out).
func movesSlots(fault string) bool { return fault == faultReshard || fault == faultScaleOut }

// move runs in.fault's slot move and records its start and end.
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

// prepareMove, for a slot move, says what it needs that is missing, or
// fills the cluster.
func prepareMove(ctx context.Context, cl *cluster, fault string) error {
	if !movesSlots(fault) {
		return nil
	}
	if cl.rc == nil {
		return fmt.Errorf("bench: -fault %s moves slots of the embedded Redis Cluster of redis-server processes, and there is none here", fault)
	}
	if _, err := redistest.CLI(); err != nil {
		return fmt.Errorf("bench: -fault %s runs redis-cli --cluster (apt-get install redis-tools): %w", fault, err)
	}
	return cl.rc.Fill(ctx, fillKeys, fillBytes)
}

// duringMove is the probe's caller g: it counts the calls it starts while
// the slots move, until ctx ends.
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

// rateKey is the Redis key of redisRateSystem.allow's first Allow.
func rateKey(key string, limits []hybrid.Limit) string {
	if len(limits) > 1 {
		key = limitKey(key, limits[0])
	}
	return "rate:" + key
}

// moveFigures fills the summary's figures of a slot move; MoveSeconds only
// if it ended within elapsed.
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
