package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redis/go-redis/v9/logging"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/hybridlimit/hybridlimit/hybrid"
	"github.com/hybridlimit/hybridlimit/internal/testkit/toxitest"
	"github.com/hybridlimit/hybridlimit/shard"
)

const (
	faultChart = "fault-timeline.svg" // the file -fault writes in -out
	numHotKeys = 6                    // enough that every node likely owns one
)

func hotKeys() []string {
	keys := make([]string, numHotKeys)
	for i := range keys {
		keys[i] = keyPrefix() + "hot:" + strconv.Itoa(i)
	}
	return keys
}

// failureMode reports whether src is an answer of the failure mode.
func failureMode(src hybrid.Source) bool {
	return src == hybrid.SourceFallback || src == hybrid.SourceFailOpen || src == hybrid.SourceFailClosed
}

// runFault runs the fault timeline of doc.go: it prints the timeline and
// the summary, and writes the chart.
func runFault(ctx context.Context, e *env, stdout io.Writer) (err error) {
	s := e.s
	// Not a line on stderr per refused dial to the faulted node.
	logging.Disable()
	defer logging.Enable()
	e.prog = newProgress(e.stderr, s.quiet, s.duration)
	defer e.prog.finish()
	if err := e.cl.flush(ctx); err != nil {
		return err
	}
	r, err := newFaultLoad(ctx, e)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, r.close()) }()
	e.prog.describe("-fault " + s.fault + " " + r.v.name)
	watch := &breakerWatch{h: r.h, name: r.v.name}
	if s.cluster {
		watch.name, watch.shard = e.cl.names[0], r.v.name
	}
	watch.sample(&second{VictimReasons: map[string]int64{}})

	runCtx, cancel := context.WithTimeout(ctx, s.duration)
	defer cancel()
	r.start = time.Now()
	in := &injector{cl: e.cl, px: r.px, fault: s.fault, victim: r.v.i, name: r.v.name, start: r.start,
		faultAt: s.duration / 3, backAt: 2 * s.duration / 3}
	var wg sync.WaitGroup
	for g := range s.concurrency {
		wg.Go(func() { r.load(ctx, runCtx, g, in) })
	}
	loaded := make(chan struct{})
	go func() { wg.Wait(); close(loaded) }()
	var injErr error
	var aside sync.WaitGroup // the injector and the probe
	aside.Go(func() { injErr = in.run(runCtx, ctx) })
	aside.Go(func() { r.probe.run(runCtx, r.start, in) })
	samples, elapsed := r.sampleBreakers(loaded, watch)
	cancel()
	aside.Wait()
	if ctx.Err() != nil {
		return fmt.Errorf("bench: interrupted: %w", ctx.Err())
	}
	if injErr != nil {
		return fmt.Errorf("bench: -fault %s on %s: %w", s.fault, r.v.name, injErr)
	}

	sum, events := r.summary(samples, elapsed, in)
	e.prog.finish()
	if err := printFault(stdout, s.json, r.seconds, sum); err != nil {
		return err
	}
	return e.writeChart(filepath.Join(s.out, faultChart), stdout, s.json, faultPlots(r.seconds, sum, faultMarks(events))...)
}

// faultLoad is a fault run's load and what it counts.
type faultLoad struct {
	e                     *env
	v                     victim
	h                     *hybridSystem
	px                    *toxitest.Proxy // in front of the victim, for slow and flap; else nil
	probe                 *rateProbe      // for the cluster faults; else nil
	hot                   []string
	zipf                  workload
	hotLimits, zipfLimits []hybrid.Limit
	start                 time.Time

	seconds []second     // the timeline
	cur     atomic.Int64 // the row being counted
	mu      sync.Mutex
	rows    []rowCounts // by row, under mu
}

// victim is the faulted node, among hybrid's nodes or the cluster's masters.
type victim struct {
	i         int
	name      string
	owner     func(key string) int // the index of the node that owns key
	hot, zipf []bool               // by key index: the victim's
	owned     []string             // its hot keys, without the prefix
}

// newFaultLoad chooses the victim, starts the Limiters (through the proxy,
// for slow and flap) and the redis_rate probe.
func newFaultLoad(ctx context.Context, e *env) (_ *faultLoad, err error) {
	s := e.s
	n := int((s.duration + s.interval - 1) / s.interval)
	r := &faultLoad{e: e, hot: hotKeys(), zipf: newWorkload("zipf", s), hotLimits: s.workloadLimits("hot"), zipfLimits: s.workloadLimits("zipf"),
		seconds: make([]second, n), rows: make([]rowCounts, n)}
	for i := range n {
		r.rows[i] = newRowCounts()
		r.seconds[i] = second{Type: "second", Fault: s.fault, T: (time.Duration(i) * s.interval).Seconds(), Interval: s.interval.Seconds(),
			VictimReasons: map[string]int64{}, Events: []string{}}
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, r.close())
		}
	}()
	if err := prepareMove(ctx, e.cl, s.fault); err != nil {
		return nil, err
	}
	if r.v, err = chooseVictim(ctx, e, r.hot, r.zipf); err != nil {
		return nil, err
	}
	var via []string
	if s.fault == "slow" || s.fault == "flap" { // they act through a proxy
		if r.px, err = toxitest.Start(e.cl.opts[r.v.i].Addr); err != nil {
			return nil, fmt.Errorf("bench: proxy for %s: %w", r.v.name, err)
		}
		via = make([]string, len(e.cl.names))
		via[r.v.i] = r.px.Addr()
	}
	if r.h, err = newHybrid(e.cl, s.instances, s.leaseFraction, s.layout(len(r.hot)+r.zipf.keys.len()), e.log, via); err != nil {
		return nil, err
	}
	if !s.cluster { // on a cluster, clusterOwners checked the slots with CLUSTER KEYSLOT
		seen, err := locateHotKeys(ctx, e.cl, r.h, r.hot, r.hotLimits)
		if err != nil {
			return nil, err
		}
		for i, k := range r.hot {
			if want := r.v.owner(k); seen[i] != want {
				return nil, fmt.Errorf("bench: hybrid sent %s to node %d, shard.New(shard.Config{}) places it on node %d: bench cannot tell the victim's keys", k, seen[i], want)
			}
		}
	}
	if r.probe, err = newRateProbe(ctx, e, r.v.owner, r.v.i, r.zipfLimits); err != nil {
		return nil, err
	}
	return r, nil
}

// close stops the probe, the Limiters and then the proxy.
func (r *faultLoad) close() error {
	err := r.probe.close()
	if r.h != nil {
		err = errors.Join(err, r.h.close())
	}
	if r.px != nil {
		r.px.Stop()
	}
	return err
}

// chooseVictim picks the node owning the most hot keys before the Limiters
// exist, so that their clients for it dial the proxy from the start.
func chooseVictim(ctx context.Context, e *env, hot []string, zipf workload) (v victim, err error) {
	names := e.cl.names
	if e.s.cluster {
		names, v.owner, err = clusterOwners(ctx, e.cl, hot)
	} else if ring, rerr := shard.New(shard.Config{}, names...); rerr != nil {
		err = fmt.Errorf("bench: ring: %w", rerr)
	} else { // as hybrid builds its own
		v.owner = func(key string) int { name, _ := ring.Locate(key); return slices.Index(names, name) }
	}
	if err != nil {
		return v, err
	}
	perNode := make([]int, len(names))
	for _, k := range hot {
		perNode[v.owner(k)]++
	}
	v.i = slices.Index(perNode, slices.Max(perNode))
	v.name, v.owned, v.hot = names[v.i], []string{}, make([]bool, len(hot))
	for i, k := range hot {
		if v.hot[i] = v.owner(k) == v.i; v.hot[i] {
			v.owned = append(v.owned, strings.TrimPrefix(k, keyPrefix()))
		}
	}
	v.zipf = make([]bool, zipf.keys.len())
	for i := range v.zipf {
		v.zipf[i] = v.owner(zipf.keys.key(i)) == v.i
	}
	return v, nil
}

// counts are decisions, by Source, and those that returned an error.
type counts struct {
	decisions, errors int64
	sources           [numSources]int64
}

func (c *counts) count(src hybrid.Source, err error) {
	c.decisions++
	switch {
	case err != nil:
		c.errors++
	case int(src) < numSources:
		c.sources[src]++
	}
}

func (c *counts) add(o counts) {
	c.decisions += o.decisions
	c.errors += o.errors
	for src, n := range o.sources {
		c.sources[src] += n
	}
}

// failed is the decisions answered by the failure mode.
func (c *counts) failed() (n int64) {
	for src, k := range c.sources {
		if failureMode(hybrid.Source(src)) {
			n += k
		}
	}
	return n
}

// rowCounts is what one goroutine, or all, counted in one row.
type rowCounts struct {
	all, victim counts                     // every decision; those for the victim's keys
	lat         [3]*hdrhistogram.Histogram // by latAll, latVictim, latOthers
	rec         recovery                   // failover only
}

// rowCounts.lat: every 8th decision; the Redis answers for the victim's keys; for the others'.
const (
	latAll = iota
	latVictim
	latOthers
)

func newRowCounts() rowCounts {
	return rowCounts{lat: [3]*hdrhistogram.Histogram{newHist(), newHist(), newHist()}, rec: recovery{-1, -1}}
}

func (r *rowCounts) add(c *rowCounts) {
	r.all.add(c.all)
	r.victim.add(c.victim)
	for i, h := range r.lat {
		h.Merge(c.lat[i])
	}
	r.rec.merge(c.rec)
}

// reset empties r, keeping its histograms.
func (r *rowCounts) reset() {
	for _, h := range r.lat {
		h.Reset()
	}
	*r = rowCounts{lat: r.lat, rec: recovery{-1, -1}}
}

// load is goroutine g's load until run ends, at most maxDecisions over
// all: the hot keys in turn (even g) or Zipf keys (odd g).
func (r *faultLoad) load(ctx, run context.Context, g int, in *injector) {
	var p *picker
	if g%2 == 1 {
		p = r.zipf.picker(uint64(g) + 1)
	}
	c, row := newRowCounts(), int64(0)
	flush := func() {
		r.mu.Lock()
		r.rows[row].add(&c)
		r.mu.Unlock()
		c.reset()
	}
	defer flush()
	failover := r.e.s.fault == faultFailover
	for i := range max(1, maxDecisions/r.e.s.concurrency) {
		if i%16 == 0 && run.Err() != nil {
			return
		}
		k := (g/2 + i) % len(r.hot)
		key, ls, mine := r.hot[k], r.hotLimits, r.v.hot[k]
		if p != nil {
			k = p.next()
			key, ls, mine = r.zipf.keys.key(k), r.zipfLimits, r.v.zipf[k]
		}
		if now := r.cur.Load(); now != row {
			flush()
			row = now
		}
		// Zipf calls are all timed: few are answered by Redis.
		sampled := i%8 == 0
		var t0 time.Time
		if sampled || p != nil {
			t0 = time.Now()
		}
		res, err := r.h.lims[(g+i)%len(r.h.lims)].AllowN(ctx, key, 1, ls...)
		if !t0.IsZero() {
			d, h := time.Since(t0), c.lat[latOthers]
			if mine {
				h = c.lat[latVictim]
			}
			if sampled {
				record(c.lat[latAll], d)
			}
			if err == nil && res.Source == hybrid.SourceRemote {
				record(h, d)
			}
		}
		c.all.count(res.Source, err)
		if mine {
			c.victim.count(res.Source, err)
			if failover && err == nil {
				c.rec.note(res.Source, t0, r.start, time.Duration(in.hit.Load()))
			}
		}
	}
}

// sampleBreakers sets the row the goroutines count in, and samples the
// victim's breakers every sampleEvery and at each row, until loaded closes.
func (r *faultLoad) sampleBreakers(loaded <-chan struct{}, w *breakerWatch) ([]sample, time.Duration) {
	var samples []sample
	var lastAt time.Duration
	var lastRow int64
	note := func(at time.Duration, row int64) {
		n := w.sample(&r.seconds[lastRow])
		r.seconds[row].Degraded = max(r.seconds[row].Degraded, n)
		samples = append(samples, sample{at: at, degraded: n})
		lastAt = at
	}
	tick := time.NewTicker(min(r.e.s.interval/10, sampleEvery))
	defer tick.Stop()
	last := r.start
	for {
		select {
		case <-loaded:
			elapsed := time.Since(r.start)
			note(elapsed, lastRow)
			return samples, elapsed
		case now := <-tick.C:
			at := now.Sub(r.start)
			row := min(int64(at/r.e.s.interval), int64(len(r.rows)-1))
			r.cur.Store(row)
			if at-lastAt >= sampleEvery || row != lastRow {
				note(at, row)
			}
			lastRow = row
			r.e.prog.add(now.Sub(last))
			last = now
		}
	}
}

// summary fills the timeline's rows from their counts and sums the run
// up. It returns the injector's events with failover's times added, in
// time order.
func (r *faultLoad) summary(samples []sample, elapsed time.Duration, in *injector) (faultSummary, []event) {
	s := r.e.s
	sum := faultSummary{Type: "fault", Fault: s.fault, Node: r.v.name, Nodes: r.e.cl.kind, HotKeys: r.v.owned,
		Instances: s.instances, Concurrency: s.concurrency, Seconds: elapsed.Seconds(), FaultAt: in.faultAt.Seconds(), Flaps: in.flaps}
	if s.fault == "slow" {
		sum.SlowMs = msPtr(slowDelay())
	}
	events, faultTime := in.events, time.Duration(-1)
	if len(events) > 0 {
		faultTime = events[0].at
		sum.FaultAt = faultTime.Seconds()
	}
	for _, ev := range events {
		if ev.back {
			v := ev.at.Seconds()
			sum.BackAt = &v
		}
	}
	sum.DegradedMs, sum.RecoveredMs = breakerTimes(samples, faultTime, sum.BackAt, s.instances)
	total := newRowCounts()
	for i := range r.rows {
		total.add(&r.rows[i])
		sum.Opened += r.seconds[i].Opened
	}
	sum.Decisions, sum.Errors, sum.Sources = total.all.decisions, total.all.errors, sourceCounts(total.all.sources)
	sum.VictimDecisions, sum.VictimFailed = total.victim.decisions, total.victim.failed()
	hit, healed := time.Duration(in.hit.Load()), time.Duration(in.healed.Load())
	switch {
	case s.fault == faultFailover:
		// No keys are left to close the dead master's breaker.
		sum.RecoveredMs = nil
		events = failoverTimes(&sum, events, total.rec, r.probe, hit, healed)
	case movesSlots(s.fault):
		moveFigures(&sum, r.probe, hit, healed, elapsed)
	}
	// The fault's rows: from its injection to before the node's return.
	from, to := len(r.rows), len(r.rows)
	if faultTime >= 0 {
		from = min(int(faultTime/s.interval), len(r.rows)-1)
		if sum.BackAt != nil {
			to = min(max(int(*sum.BackAt/s.interval.Seconds()), from+1), len(r.rows))
		}
	}
	win := newRowCounts()
	for i := range r.rows {
		c, t := &r.rows[i], &r.seconds[i]
		if i >= from && i < to {
			win.add(c)
		}
		t.Decisions, t.Errors, t.Sources, t.P99us = c.all.decisions, c.all.errors, sourceCounts(c.all.sources), quantileUs(c.lat[latAll], 99)
		t.VictimDecisions, t.VictimSources, t.VictimFailed = c.victim.decisions, sourceCounts(c.victim.sources), c.victim.failed()
		t.VictimP99us, t.OthersP99us = quantileUs(c.lat[latVictim], 99), quantileUs(c.lat[latOthers], 99)
		if width := min(s.interval, elapsed-time.Duration(i)*s.interval); width > 0 {
			t.DecisionsPerSec = float64(t.Decisions) / width.Seconds()
		}
		if t.VictimDecisions > 0 {
			t.VictimFailedPct = 100 * float64(t.VictimFailed) / float64(t.VictimDecisions)
		}
		for _, ev := range events {
			if j := int(ev.at / s.interval); j == i || (i == len(r.rows)-1 && j > i) {
				t.Events = append(t.Events, ev.label)
			}
		}
	}
	if win.victim.decisions > 0 {
		sum.FaultVictimPct = 100 * float64(win.victim.failed()) / float64(win.victim.decisions)
	}
	sum.FaultVictimP99us = quantileUs(win.lat[latVictim], 99)
	return sum, events
}

// sourceCounts names the counts by source, leaving out zeros.
func sourceCounts(counts [numSources]int64) map[string]int64 {
	m := map[string]int64{}
	for src, n := range counts {
		if n > 0 {
			m[hybrid.Source(src).String()] = n
		}
	}
	return m
}

// msPtr is d in milliseconds, for the summary's nullable fields.
func msPtr(d time.Duration) *float64 {
	v := float64(d) / float64(time.Millisecond)
	return &v
}

// sample is how many instances had the breaker not closed, at a time since the start.
type sample struct {
	at       time.Duration
	degraded int
}

// breakerTimes returns, in ms, how long after faultAt (< 0: none) every
// instance had the breaker not closed, and after backAt (s; nil: never)
// none had, for good; nil when it did not happen within the run.
func breakerTimes(samples []sample, faultAt time.Duration, backAt *float64, instances int) (degraded, recovered *float64) {
	if faultAt < 0 {
		return nil, nil
	}
	if i := slices.IndexFunc(samples, func(s sample) bool { return s.at >= faultAt && s.degraded >= instances }); i >= 0 {
		degraded = msPtr(samples[i].at - faultAt)
	}
	if backAt == nil {
		return degraded, nil
	}
	back := time.Duration(*backAt * float64(time.Second))
	var rec time.Duration = -1
	for _, s := range samples {
		switch {
		case s.at < back:
		case s.degraded > 0:
			rec = -1
		case rec < 0:
			rec = s.at
		}
	}
	if rec >= 0 {
		recovered = msPtr(rec - back)
	}
	return degraded, recovered
}

// breakerWatch follows the victim's breaker in every instance: openings
// (exact), closings (only those seen between samples) and the failure
// mode's answers by Reason. With shard set (a cluster master) the breaker
// is that master's, the Reasons the whole node's.
type breakerWatch struct {
	h           *hybridSystem
	name, shard string
	// At the last sample: over the instances, and by instance.
	opened    int64
	undecided map[hybrid.Reason]int64
	degraded  []bool
}

// sample adds to t what changed since the last sample and returns how
// many instances have the breaker not closed now.
func (w *breakerWatch) sample(t *second) (n int) {
	opened, undecided := int64(0), map[hybrid.Reason]int64{}
	nds := w.h.nodeStats(w.name)
	if w.degraded == nil {
		w.degraded = make([]bool, len(nds))
	}
	for i, nd := range nds {
		o, degraded := nd.Opened, nd.Degraded
		if w.shard != "" {
			o, degraded = 0, false
			for _, sh := range nd.Shards {
				if sh.Name == w.shard {
					o, degraded = sh.Opened, sh.Breaker != "closed"
				}
			}
		}
		if degraded {
			n++
		} else if w.degraded[i] {
			t.Closed++
		}
		opened, w.degraded[i] = opened+o, degraded
		for why, n := range nd.Undecided {
			undecided[why] += n
		}
	}
	t.Opened += opened - w.opened
	for why, k := range undecided {
		if d := k - w.undecided[why]; d > 0 {
			t.VictimReasons[why.String()] += d
		}
	}
	w.opened, w.undecided = opened, undecided
	return n
}

// locateHotKeys returns each hot key's node index in cl.names (-1: none)
// by whose Stats().Nodes[].Calls one request moved. (A 1e9/s bucket
// expires too fast for its Redis key to tell.)
func locateHotKeys(ctx context.Context, cl *cluster, h *hybridSystem, hot []string, limits []hybrid.Limit) ([]int, error) {
	lim := h.lims[0]
	calls := func() map[string]int64 {
		m := map[string]int64{}
		for _, n := range lim.Stats().Nodes {
			m[n.Name] = n.Calls
		}
		return m
	}
	owners := make([]int, len(hot))
	for j, k := range hot {
		before := calls()
		if _, err := lim.AllowN(ctx, k, 1, limits...); err != nil {
			return nil, fmt.Errorf("bench: warming %s: %w", k, err)
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("bench: interrupted: %w", err)
		}
		after := calls()
		owners[j] = slices.IndexFunc(cl.names, func(name string) bool { return after[name] > before[name] })
	}
	return owners, nil
}

// faultMarks marks the events that are not quiet: red, green for back.
func faultMarks(events []event) []marker {
	var marks []marker
	for _, ev := range events {
		if !ev.quiet {
			m := marker{x: ev.at.Seconds(), label: ev.label, color: color.RGBA{R: 200, A: 255}, row: len(marks)}
			if ev.back {
				m.color = color.RGBA{G: 140, A: 255}
			}
			marks = append(marks, m)
		}
	}
	return marks
}

// printFault writes the timeline and the summary as a table or JSON lines.
func printFault(w io.Writer, asJSON bool, timeline []second, sum faultSummary) error {
	if asJSON {
		enc := json.NewEncoder(w)
		for _, t := range timeline {
			if err := enc.Encode(t); err != nil {
				return err
			}
		}
		return enc.Encode(sum)
	}
	tw := newTable(w)
	var cols []string
	fmt.Fprint(tw, "t\tdecisions/s")
	for _, src := range sourceNames() {
		if sum.Sources[src] > 0 {
			cols = append(cols, src)
			fmt.Fprintf(tw, "\t%s/s", src)
		}
	}
	fmt.Fprintln(tw, "\terrors\tp99\tdegraded\topened/closed\tvictim fm\tvictim p99\tothers p99\tevent")
	for _, t := range timeline {
		fmt.Fprintf(tw, "%.1fs\t%.0f", t.T, t.DecisionsPerSec)
		for _, c := range cols {
			fmt.Fprintf(tw, "\t%.0f", perSec(t.Sources[c], t))
		}
		fmt.Fprintf(tw, "\t%d\t%s\t%d/%d\t%d/%d\t%s\t%s\t%s\t%s\n", t.Errors, latency(t.P99us), t.Degraded, sum.Instances,
			t.Opened, t.Closed, share(t.VictimFailed, t.VictimDecisions), latencyOr(t.VictimP99us, "-"),
			latencyOr(t.OthersP99us, "-"), eventSummary(t.Events))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nfault: %s of %s at %.2fs", sum.Fault, sum.Node, sum.FaultAt)
	if len(sum.HotKeys) > 0 {
		fmt.Fprintf(w, " (it owns %s and its share of the zipf keys)", strings.Join(sum.HotKeys, ", "))
	}
	fmt.Fprintln(w)
	switch {
	case sum.SlowMs != nil:
		fmt.Fprintf(w, "its replies delayed by %.0fms ± %.0f%% (%.0f%% of the Limiter's Timeout)\n", *sum.SlowMs, 100*slowJitter, 100*slowFraction)
	case sum.Fault == "flap":
		fmt.Fprintf(w, "the path to it down %d times, each down or up for %v–%v\n", sum.Flaps, flapMin, flapMax)
	}
	fmt.Fprintf(w, "errors returned to callers: %d of %d decisions\n", sum.Errors, sum.Decisions)
	fmt.Fprintf(w, "its keys' decisions answered by the failure mode from the fault to its return: %s; p99 of their Redis answers there: %s\n",
		pct(sum.FaultVictimPct), latencyOr(sum.FaultVictimP99us, "none"))
	switch {
	case sum.DegradedMs != nil:
		fmt.Fprintf(w, "every instance's breaker for the node open (its keys answered in process) %.0fms after the fault; %d openings in all\n", *sum.DegradedMs, sum.Opened)
	case sum.Opened == 0:
		fmt.Fprintln(w, "no instance's breaker for the node ever opened")
	default:
		fmt.Fprintf(w, "the node's breaker opened %d times, never on every instance at once\n", sum.Opened)
	}
	switch {
	case sum.Fault == faultFailover:
		printFailover(w, sum)
	case movesSlots(sum.Fault):
		printMove(w, sum)
	case sum.BackAt == nil:
		fmt.Fprintln(w, "the node stays down until the end")
	case sum.Opened == 0 && sum.DegradedMs == nil:
		fmt.Fprintf(w, "node back at %.2fs\n", *sum.BackAt)
	case sum.RecoveredMs != nil:
		fmt.Fprintf(w, "node back at %.2fs; every instance's breaker closed again %.0fms later\n", *sum.BackAt, *sum.RecoveredMs)
	default:
		fmt.Fprintf(w, "node back at %.2fs; some breaker still open at the end of the run\n", *sum.BackAt)
	}
	return nil
}

// share formats n of total as a percentage, "-" when total is 0.
func share(n, total int64) string {
	if total == 0 {
		return "-"
	}
	return pct(100 * float64(n) / float64(total))
}

// pct formats a percentage: "0%", "<0.1%", "3.2%", "41%".
func pct(v float64) string {
	switch {
	case v == 0:
		return "0%"
	case v < 0.1:
		return "<0.1%"
	case v < 10:
		return fmt.Sprintf("%.1f%%", v)
	default:
		return fmt.Sprintf("%.0f%%", v)
	}
}

// latencyOr is latency, or none for 0 (no samples).
func latencyOr(us float64, none string) string {
	if us == 0 {
		return none
	}
	return latency(us)
}

// perSec turns a count of a row into a rate.
func perSec(n int64, t second) float64 {
	if t.Decisions == 0 || t.DecisionsPerSec == 0 {
		return 0
	}
	return float64(n) * t.DecisionsPerSec / float64(t.Decisions)
}

// faultPlots draws decisions/s by Source and p99 over time, the fault marked.
func faultPlots(timeline []second, sum faultSummary, marks []marker) []*plot.Plot {
	// Short y labels: gonum pads the plot for a log axis's label.
	rate := newPlot(fmt.Sprintf("decisions/s by Source, -fault %s of %s; errors returned to callers: %d\n(log scale; 0 drawn at 1)", sum.Fault, sum.Node, sum.Errors),
		"time (s)", "decisions/s")
	lat := newPlot("p99 decision latency (log scale; 0 drawn at 0.01 µs)", "time (s)", "p99 (µs)")
	over := func(y func(second) float64) plotter.XYs {
		xys := plotter.XYs{}
		for _, t := range timeline {
			xys = append(xys, plotter.XY{X: t.T + t.Interval/2, Y: y(t)})
		}
		return xys
	}
	entries := []int{1, 1} // of rate's legend, and lat's
	_ = addLine(rate, "all", 0, true, over(func(t second) float64 { return positive(t.DecisionsPerSec) }))
	for i, src := range sourceNames() {
		if sum.Sources[src] > 0 {
			_ = addLine(rate, src, i+1, false, over(func(t second) float64 { return positive(perSec(t.Sources[src], t)) }))
			entries[0]++
		}
	}
	_ = addLine(lat, "p99", 0, false, over(func(t second) float64 { return atLeast(t.P99us, 0.01) }))
	if slices.ContainsFunc(timeline, func(t second) bool { return t.VictimP99us > 0 }) {
		_ = addLine(lat, "p99 of the victim's Redis answers", 1, false, over(func(t second) float64 { return atLeast(t.VictimP99us, 0.01) }))
		entries[1]++
	}
	end := 0.0 // the whole run, empty rows too
	if n := len(timeline); n > 0 {
		end = timeline[n-1].T + timeline[n-1].Interval
	}
	for i, p := range []*plot.Plot{rate, lat} {
		useLogY(p)
		headroom(p, entries[i])
		for _, m := range marks {
			p.Add(m) // labelled at its top, a marker needs no legend entry
		}
		p.X.Min, p.X.Max = 0, max(end, p.X.Max)
		p.X.Tick.Marker = stepTicks{}
	}
	return []*plot.Plot{rate, lat}
}
