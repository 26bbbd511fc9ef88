package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/hybridlimit/hybridlimit/hybrid"
	"github.com/hybridlimit/hybridlimit/limit"
)

const (
	maxDecisions = 1 << 30               // a run's decisions at most, shared among its goroutines
	sampleEvery  = 20 * time.Millisecond // how often a run samples lease units and moves the progress bar
	// Latencies are HDR histograms of ns, 1ns to histMax (longer ones count
	// as histMax), within 1%. A histogram is not safe for concurrent use.
	histMax     = time.Minute
	histSigFigs = 2
)

func newHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(histMax), histSigFigs)
}

// record counts d in h, clamped to [0, histMax].
func record(h *hdrhistogram.Histogram, d time.Duration) {
	_ = h.RecordValue(int64(min(max(d, 0), histMax))) // in range: no error
}

// quantileUs returns h's q-th percentile (99 for p99) in µs; 0 when empty.
func quantileUs(h *hdrhistogram.Histogram, q float64) float64 {
	if h.TotalCount() == 0 {
		return 0
	}
	return float64(h.ValueAtQuantile(q)) / 1e3
}

const numSources = int(hybrid.SourceFailClosed) + 1

// env is what every run of one invocation shares.
type env struct {
	s      settings
	cl     *cluster
	stderr io.Writer
	log    *slog.Logger // hybrid's log
	prog   *progress

	cpuWarned bool // that the nodes' CPU cannot be read was said
}

// newSetup describes a run; redis_rate is one GCRA instance, the generator none.
func newSetup(e *env, w workload, system string, fraction float64) setup {
	st := setup{
		Workload: w.name, System: system, Nodes: e.cl.kind,
		Algorithm: algorithmName(w.limits[0].Algorithm), Limit: formatLimits(w.limits), Keys: w.keys.len(),
		Instances: e.s.instances, Concurrency: e.s.concurrency, LeaseFraction: fraction, Layout: layoutKeys,
	}
	if e.s.compact {
		st.Layout = layoutCompact
	}
	switch system {
	case sysRedisRate:
		st.Instances, st.Algorithm, st.LeaseFraction, st.Layout = 1, "gcra", 0, "-"
	case sysGenerator:
		st.Instances, st.Algorithm, st.Limit, st.LeaseFraction, st.Layout = 0, "-", "-", 0, "-"
	}
	return st
}

// tally is one goroutine's counts, or (add) a run's; not safe for concurrent use.
type tally struct {
	decisions, admitted, errors int64 // decisions: calls made and returned, failed ones included
	abandoned                   int64 // open loop: arrivals not started by the drain deadline
	oneKey                      int64 // closed loop: requests, when the key space is one key
	firstErr                    error
	sources                     [numSources]int64 // of the decisions without an error
	last                        time.Duration     // open loop: when its last call returned
	latency                     *hdrhistogram.Histogram
}

// count counts one decision, as sys.allow returned it.
func (t *tally) count(ok bool, src hybrid.Source, err error) {
	t.decisions++
	if err != nil {
		t.errors, t.firstErr = t.errors+1, cmp.Or(t.firstErr, err)
		return
	}
	if ok {
		t.admitted++
	}
	if int(src) < numSources {
		t.sources[src]++
	}
}

// add adds what o counted to t; o's latencies when both have them.
func (t *tally) add(o *tally) {
	t.decisions, t.admitted, t.errors = t.decisions+o.decisions, t.admitted+o.admitted, t.errors+o.errors
	t.abandoned, t.oneKey, t.last = t.abandoned+o.abandoned, t.oneKey+o.oneKey, max(t.last, o.last)
	t.firstErr = cmp.Or(t.firstErr, o.firstErr)
	for src, n := range o.sources {
		t.sources[src] += n
	}
	if t.latency != nil && o.latency != nil {
		t.latency.Merge(o.latency)
	}
}

// sourceNames returns the decisions by source name, zero counts left out.
func (t *tally) sourceNames() map[string]int64 {
	m := map[string]int64{}
	for src, n := range t.sources {
		if n > 0 {
			m[hybrid.Source(src).String()] = n
		}
	}
	return m
}

// warnErrors reports t's failed decisions on stderr unless ctx was cancelled.
func (e *env) warnErrors(ctx context.Context, what string, t *tally) {
	if t.errors > 0 && ctx.Err() == nil {
		fmt.Fprintf(e.stderr, "bench: %s: %d of %d decisions failed, first: %v\n", what, t.errors, t.decisions, t.firstErr)
	}
}

// meters are the round trips to Redis and the CPU of bench and the nodes.
type meters struct {
	calls         int64
	client, redis time.Duration
	redisOK       bool // redis could be read
}

// startMeters reads the bench process's CPU last: reading the nodes' costs some.
func (e *env) startMeters(ctx context.Context, sys system) meters {
	redis, ok := e.redisCPU(ctx)
	return meters{calls: sys.calls(), client: processCPU(), redis: redis, redisOK: ok}
}

// since returns the meters since m0, reading the bench process's CPU first.
func (m0 meters) since(ctx context.Context, e *env, sys system) meters {
	client := processCPU() - m0.client
	redis, ok := e.redisCPU(ctx)
	return meters{calls: sys.calls() - m0.calls, client: client, redis: redis - m0.redis, redisOK: ok && m0.redisOK}
}

// perDecision returns m per decision of n > 0, CPU in µs (redisUs nil: unread).
func (m meters) perDecision(n int64) (calls, clientUs float64, redisUs *float64) {
	d := float64(n)
	if m.redisOK {
		v := float64(m.redis.Microseconds()) / d
		redisUs = &v
	}
	return float64(m.calls) / d, float64(m.client.Microseconds()) / d, redisUs
}

// keyCounts is a run's requests per key, added atomically (uint32: maxDecisions
// < 2^32), and when each key's first admission was answered (ns since the start,
// plus one; 0: none), a round trip after Redis decided it.
type keyCounts struct {
	n     []uint32
	first []atomic.Int64
}

func (c *keyCounts) count(k int) { atomic.AddUint32(&c.n[k], 1) }

// seen notes an admission of key k answered at, if the earliest.
func (c *keyCounts) seen(k int, at time.Duration) {
	v := int64(at) + 1
	for {
		old := c.first[k].Load()
		if old != 0 && old <= v || c.first[k].CompareAndSwap(old, v) {
			return
		}
	}
}

// minMemoryKeys is the fewest keys a run's memory per key is given for:
// below, the nodes' other memory (buffers, the scripts) is most of it.
const minMemoryKeys = 1000

// asked is how many keys had a request.
func (c *keyCounts) asked() (n int) {
	for _, v := range c.n {
		if v > 0 {
			n++
		}
	}
	return n
}

// from is when key k's first admission was answered (0: none noted).
func (c *keyCounts) from(k int) time.Duration {
	if c.first == nil {
		return 0
	}
	return time.Duration(max(c.first[k].Load()-1, 0))
}

// measure runs w closed loop against sysName on flushed nodes, then closes it.
func measure(ctx context.Context, e *env, w workload, sysName string, fraction float64) (res result, err error) {
	if err := e.cl.flush(ctx); err != nil {
		return res, err
	}
	sys, err := e.newSystem(sysName, fraction, w.keys.len())
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, sys.close()) }()

	perG := max(1, maxDecisions/e.s.concurrency)
	tallies := make([]tally, e.s.concurrency)
	counts := &keyCounts{n: make([]uint32, w.keys.len()), first: make([]atomic.Int64, w.keys.len())}
	oneKey := w.keys.len() == 1 // count without an atomic on the hot path
	mem0, memOK := e.redisMemory(ctx)
	m := e.startMeters(ctx, sys)
	runCtx, cancel := context.WithTimeout(ctx, e.s.duration)
	defer cancel()
	stop := runCtx.Done()
	start := time.Now()
	var wg sync.WaitGroup
	for g := range tallies {
		wg.Go(func() {
			t, p := &tallies[g], w.picker(uint64(g)+1)
			t.latency = newHist()
			// A context of its own: a shared Done channel is contended.
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			for i := 0; i < perG; i++ {
				if i%16 == 0 && isClosed(stop) {
					return
				}
				k := p.next()
				var t0 time.Time
				if i%8 == 0 { // the latency of every 8th call
					t0 = time.Now()
				}
				ok, src, err := sys.allow(ctx, g, i, w.keys.key(k), w.limits)
				if !t0.IsZero() {
					record(t.latency, time.Since(t0))
				}
				t.count(ok, src, err)
				if oneKey {
					t.oneKey++
				} else {
					counts.count(k)
				}
				if ok && counts.first[k].Load() == 0 {
					counts.seen(k, time.Since(start))
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	h, leases := sys.(*hybridSystem)
	leases = leases && fraction > 0
	var unitsMax, unitsSum, samples int64
	last := start
	for tick := time.Tick(sampleEvery); !isClosed(done); {
		select {
		case <-done:
		case now := <-tick:
			if leases {
				u := h.leaseUnits()
				unitsMax, unitsSum, samples = max(unitsMax, u), unitsSum+u, samples+1
			}
			e.prog.add(now.Sub(last))
			last = now
		}
	}
	elapsed := time.Since(start)
	cost := m.since(ctx, e, sys)
	e.prog.add(max(0, min(e.s.duration, elapsed)-last.Sub(start)))

	all := tally{latency: newHist()}
	for i := range tallies {
		all.add(&tallies[i])
	}
	counts.n[0] += uint32(all.oneKey)
	e.warnErrors(ctx, w.name+"/"+sysName, &all)
	res = result{
		Type: "result", Mode: e.s.mode, setup: newSetup(e, w, sysName, fraction), Seconds: elapsed.Seconds(),
		Decisions: all.decisions, Admitted: all.admitted, Errors: all.errors, Sources: all.sourceNames(),
	}
	if all.decisions == 0 {
		return res, nil
	}
	res.DecisionsPerSec = float64(all.decisions) / elapsed.Seconds()
	res.RedisCallsPerDecision, res.ClientCPUus, res.RedisCPUus = cost.perDecision(all.decisions)
	if mem1, ok := e.redisMemory(ctx); ok && memOK {
		if asked := counts.asked(); asked >= minMemoryKeys {
			v := float64(mem1-mem0) / float64(asked)
			res.RedisBytesPerKey = &v
		}
	}
	res.P50us, res.P99us = quantileUs(all.latency, 50), quantileUs(all.latency, 99)
	enforced := w.limits
	if sysName == sysRedisRate {
		enforced = slices.Clone(enforced)
		for i := range enforced {
			enforced[i].Algorithm = hybrid.TokenBucket // GCRA admits what a token bucket does
		}
	}
	if res.Ideal = ideal(enforced, counts, start, elapsed); res.Ideal > 0 {
		res.AdmittedPctOfIdeal, res.LeaseBoundPct = 100*float64(res.Admitted)/res.Ideal, 100*float64(unitsMax)/res.Ideal
	}
	if samples > 0 {
		res.LeaseUnitsMax, res.LeaseUnitsMean = unitsMax, float64(unitsSum)/float64(samples)
	}
	return res, nil
}

// isClosed reports whether c is closed, without waiting.
func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// ideal is the most an exact limiter admits in [start, start+elapsed]: the sum
// over keys of min(requests, limitsCapacity from the key's first admission).
func ideal(limits []hybrid.Limit, counts *keyCounts, start time.Time, elapsed time.Duration) float64 {
	least := limits[0].Capacity()
	for _, l := range limits[1:] {
		least = min(least, l.Capacity())
	}
	var sum float64
	for k, n := range counts.n {
		if int64(n) <= least {
			sum += float64(n)
			continue
		}
		from := min(counts.from(k), elapsed)
		sum += math.Min(float64(n), limitsCapacity(limits, start.Add(from), elapsed-from))
	}
	return sum
}

// limitsCapacity is the least keyCapacity: a request passes where all admit it.
func limitsCapacity(limits []hybrid.Limit, start time.Time, elapsed time.Duration) float64 {
	c := math.Inf(1)
	for _, l := range limits {
		c = math.Min(c, keyCapacity(l, start, elapsed))
	}
	return c
}

// keyCapacity is the most an exact limiter admits one key in [start,
// start+elapsed] from its first admission: capacity + rate × periods for the
// buckets; rate × the Unix-time windows touched for FixedWindow; rate ×
// (⌊periods⌋ + 1) for SlidingWindowLog; saturated for SlidingWindowCounter.
func keyCapacity(l hybrid.Limit, start time.Time, elapsed time.Duration) float64 {
	r := float64(l.Rate)
	periods := elapsed.Seconds() / l.Period.Seconds()
	switch l.Algorithm {
	case hybrid.FixedWindow:
		p := l.Period.Microseconds()
		return r * float64(start.Add(elapsed).UnixMicro()/p-start.UnixMicro()/p+1)
	case hybrid.SlidingWindowLog:
		return r * (math.Floor(periods) + 1)
	case hybrid.SlidingWindowCounter:
		return saturated(l, start, elapsed)
	default:
		return float64(l.Capacity()) + r*periods
	}
}

// saturated is what package limit admits a key asking all it has at ≤200,000 steps.
func saturated(l hybrid.Limit, start time.Time, elapsed time.Duration) float64 {
	step := max(l.Period/time.Duration(8*l.Rate), elapsed/200_000, time.Microsecond)
	var s limit.State
	var admitted int64
	for at := time.Duration(0); at <= elapsed; at += step {
		now := start.Add(at)
		next, d, err := limit.Take(s, l, now, 1)
		if err != nil || !d.Allowed {
			continue
		}
		s, admitted = next, admitted+1
		if d.Remaining > 0 {
			if next, d2, err := limit.Take(s, l, now, d.Remaining); err == nil && d2.Allowed {
				s, admitted = next, admitted+d.Remaining
			}
		}
	}
	return float64(admitted)
}
