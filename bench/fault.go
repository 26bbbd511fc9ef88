package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
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

// faultChart is the file -fault writes in -out.
const faultChart = "fault-timeline.svg"

// numHotKeys is the number of hot keys of the fault run's mix: enough
// that every node likely owns one.
const numHotKeys = 6

// hotKeys are the hot keys of the fault run.
func hotKeys() []string {
	keys := make([]string, numHotKeys)
	for i := range keys {
		keys[i] = keyPrefix() + "hot:" + strconv.Itoa(i)
	}
	return keys
}

// faultRow is what one goroutine counted in one row of the timeline.
type faultRow struct {
	decisions, errors int64
	sources           [numSources]int64
	// Decisions for keys of the victim, by source.
	victim        int64
	victimSources [numSources]int64
}

// rowLatency is the latencies of one row of the timeline: of every 8th
// decision, and of the answers from Redis for the victim's keys and for
// the other nodes' keys. Each goroutine records into one of its own for
// the row it counts, and merges it into the row's (under a lock) when it
// moves on to another row or stops.
type rowLatency struct {
	all, victim, others *hdrhistogram.Histogram
}

func newRowLatency() rowLatency {
	return rowLatency{all: newHist(), victim: newHist(), others: newHist()}
}

// moveTo merges l into into and empties l.
func (l rowLatency) moveTo(into rowLatency) {
	into.all.Merge(l.all)
	into.victim.Merge(l.victim)
	into.others.Merge(l.others)
	l.all.Reset()
	l.victim.Reset()
	l.others.Reset()
}

// failureMode reports whether src is an answer of the failure mode.
func failureMode(src hybrid.Source) bool {
	return src == hybrid.SourceFallback || src == hybrid.SourceFailOpen || src == hybrid.SourceFailClosed
}

// sample is how many instances had the faulted node's breaker not closed
// at a time since the start.
type sample struct {
	at       time.Duration
	degraded int
}

// breakerTimes reads the samples: how long after the fault (at faultAt;
// negative when it was not injected) every instance had the node's
// breaker open or half-open, and how long after the node came back (at
// backAt seconds, nil for kill) no instance had any more, for good.
// Either is nil when it did not happen within the run.
func breakerTimes(samples []sample, faultAt time.Duration, backAt *float64, instances int) (degraded, recovered *float64) {
	ms := func(d time.Duration) *float64 {
		v := float64(d) / float64(time.Millisecond)
		return &v
	}
	if faultAt < 0 {
		return nil, nil
	}
	for _, s := range samples {
		if s.at >= faultAt && s.degraded >= instances {
			degraded = ms(s.at - faultAt)
			break
		}
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
		recovered = ms(rec - back)
	}
	return degraded, recovered
}

// breakerWatch follows the victim's counters in every instance from one
// sample to the next: breaker openings (exact, NodeStats.Opened), closings
// (seen: an instance's breaker not closed at one sample and closed at the
// next; one that closes and opens again between two samples is not seen
// closing), and the failure mode's answers by Reason. With shard set (a
// master of a cluster node) the breaker is that master's
// (NodeStats.Shards), the Reasons the whole node's.
type breakerWatch struct {
	name      string
	shard     string
	opened    []int64
	undecided []map[hybrid.Reason]int64
	degraded  []bool
}

// watchStep is what a sample of breakerWatch found.
type watchStep struct {
	degraded       int // instances with the breaker not closed now
	opened, closed int64
	reasons        map[hybrid.Reason]int64
}

func newBreakerWatch(h *hybridSystem, name, shard string) *breakerWatch {
	w := &breakerWatch{name: name, shard: shard}
	for _, nd := range h.nodeStats(name) {
		opened, degraded := w.breaker(nd)
		w.opened = append(w.opened, opened)
		w.undecided = append(w.undecided, nd.Undecided)
		w.degraded = append(w.degraded, degraded)
	}
	return w
}

// breaker returns the openings and whether the watched breaker is not
// closed: the node's, or its shard's (closed while no key has reached
// the master yet).
func (w *breakerWatch) breaker(nd hybrid.NodeStats) (opened int64, degraded bool) {
	if w.shard == "" {
		return nd.Opened, nd.Degraded
	}
	for _, sh := range nd.Shards {
		if sh.Name == w.shard {
			return sh.Opened, sh.Breaker != "closed"
		}
	}
	return 0, false
}

// sample reads the counters now and returns what changed since the last
// sample.
func (w *breakerWatch) sample(h *hybridSystem) watchStep {
	st := watchStep{reasons: map[hybrid.Reason]int64{}}
	for i, nd := range h.nodeStats(w.name) {
		opened, degraded := w.breaker(nd)
		if degraded {
			st.degraded++
		} else if w.degraded[i] {
			st.closed++
		}
		st.opened += opened - w.opened[i]
		for r, n := range nd.Undecided {
			if d := n - w.undecided[i][r]; d > 0 {
				st.reasons[r] += d
			}
		}
		w.opened[i], w.undecided[i], w.degraded[i] = opened, nd.Undecided, degraded
	}
	return st
}

// runFault drives a mix of hot keys (half the goroutines) and Zipf keys
// (the other half) through -instances Limiters for -duration; at a third
// of it, it kills, pauses, restarts, slows or flaps the embedded node that
// owns the most hot keys (pause, slow and flap end at two thirds). It
// prints the timeline, a summary, and writes the chart.
func runFault(ctx context.Context, e *env, stdout io.Writer) (err error) {
	s := e.s
	// go-redis logs every refused dial to the faulted node on stderr; the
	// timeline says it better.
	logging.Disable()
	defer logging.Enable()
	e.prog = newProgress(e.stderr, s.quiet, s.duration)
	defer e.prog.finish()
	if err := e.cl.flush(ctx); err != nil {
		return err
	}

	// The victim is known before the Limiters are built, from the ring
	// they will use, so that their clients for it can dial the proxy from
	// the start. locateHotKeys checks the ring against the Limiters.
	hot := hotKeys()
	hotLimits, zipfLimits := s.workloadLimits("hot"), s.workloadLimits("zipf")
	zipfW := newWorkload("zipf", s)
	if movesSlots(s.fault) {
		if err := checkMove(e.cl, s.fault); err != nil {
			return err
		}
		if err := e.cl.rc.Fill(ctx, fillKeys, fillBytes); err != nil {
			return err
		}
	}
	// names are the nodes the victim is chosen from: hybrid's nodes, or
	// on a cluster its masters (hybrid's one node).
	var names []string
	var owner func(key string) int
	if s.cluster {
		names, owner, err = clusterOwners(ctx, e.cl, hot)
	} else {
		names, owner, err = ringOwners(e.cl)
	}
	if err != nil {
		return err
	}
	hotOwner := make([]int, len(hot))
	perNode := make([]int, len(names))
	for i, k := range hot {
		hotOwner[i] = owner(k)
		perNode[hotOwner[i]]++
	}
	victim := 0
	for i := range perNode {
		if perNode[i] > perNode[victim] {
			victim = i
		}
	}
	victimName := names[victim]

	var via []string
	var px *toxitest.Proxy
	if viaProxy(s.fault) {
		px, err = toxitest.Start(e.cl.opts[victim].Addr)
		if err != nil {
			return fmt.Errorf("bench: proxy for %s: %w", victimName, err)
		}
		defer px.Stop() // after the Limiters and their clients
		via = make([]string, len(e.cl.names))
		via[victim] = px.Addr()
	}
	h, err := newHybrid(e.cl, s.instances, s.leaseFraction, e.log, via)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, h.close()) }()
	seen := hotOwner // clusterOwners checked the slots with CLUSTER KEYSLOT
	if !s.cluster {
		if seen, err = locateHotKeys(ctx, e.cl, h, hot, hotLimits); err != nil {
			return err
		}
	}
	var owned []string
	victimHot := make([]bool, len(hot))
	for i, k := range hot {
		if seen[i] != hotOwner[i] {
			return fmt.Errorf("bench: hybrid sent %s to node %d, shard.New(shard.Config{}) places it on node %d: bench cannot tell the victim's keys", k, seen[i], hotOwner[i])
		}
		if victimHot[i] = hotOwner[i] == victim; victimHot[i] {
			owned = append(owned, strings.TrimPrefix(k, keyPrefix()))
		}
	}
	victimZipf := make([]bool, zipfW.keys.len())
	for i := range victimZipf {
		victimZipf[i] = owner(zipfW.keys.key(i)) == victim
	}
	e.prog.describe("-fault " + s.fault + " " + victimName)

	faultAt := s.duration / 3
	backAt := 2 * s.duration / 3
	nRows := int((s.duration + s.interval - 1) / s.interval)
	rows := make([][]faultRow, s.concurrency)
	rowLat := make([]rowLatency, nRows)
	for r := range rowLat {
		rowLat[r] = newRowLatency()
	}
	var rowLatMu sync.Mutex
	var cur atomic.Int64 // the row being counted
	perG := max(1, maxDecisions/s.concurrency)
	watchNode, watchShard := victimName, ""
	if s.cluster {
		watchNode, watchShard = e.cl.names[0], victimName
	}
	watch := newBreakerWatch(h, watchNode, watchShard)
	// With -fault failover, per goroutine the first answer from Redis for
	// the victim's keys asked after the kill and the last from the failure
	// mode.
	var recov []recovery
	if s.fault == faultFailover {
		recov = make([]recovery, s.concurrency)
		for g := range recov {
			recov[g] = recovery{firstRemote: -1, lastFailure: -1}
		}
	}
	probe, err := newRateProbe(ctx, e, owner, victim, zipfLimits)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, probe.close()) }()

	runCtx, cancel := context.WithTimeout(ctx, s.duration)
	defer cancel()
	stop := runCtx.Done()
	start := time.Now()
	in := &injector{cl: e.cl, px: px, fault: s.fault, victim: victim, name: victimName, start: start, faultAt: faultAt, backAt: backAt}
	var wg sync.WaitGroup
	for g := range s.concurrency {
		rows[g] = make([]faultRow, nRows)
		wg.Go(func() {
			var p *picker
			if g%2 == 1 {
				p = zipfW.picker(uint64(g) + 1)
			}
			lat, latRow := newRowLatency(), int64(0)
			flush := func() {
				rowLatMu.Lock()
				lat.moveTo(rowLat[latRow])
				rowLatMu.Unlock()
			}
			defer flush()
			for i := 0; i < perG; i++ {
				if i%16 == 0 {
					select {
					case <-stop:
						return
					default:
					}
				}
				k := (g/2 + i) % len(hot)
				key, ls, mine := hot[k], hotLimits, victimHot[k]
				if p != nil {
					k = p.next()
					key, ls, mine = zipfW.keys.key(k), zipfLimits, victimZipf[k]
				}
				ri := cur.Load()
				if ri != latRow {
					flush()
					latRow = ri
				}
				row := &rows[g][ri]
				lim := h.lims[(g+i)%len(h.lims)]
				// One call in 8 is timed for p99, and on the Zipf side
				// every call, so that the latency of the answers from
				// Redis, a few in a thousand, is read from enough of them.
				var r hybrid.Result
				var err error
				var t0 time.Time
				if sampled := i%8 == 0; sampled || p != nil {
					t0 = time.Now()
					r, err = lim.AllowN(ctx, key, 1, ls...)
					d := time.Since(t0)
					if sampled {
						record(lat.all, d)
					}
					if err == nil && r.Source == hybrid.SourceRemote {
						if mine {
							record(lat.victim, d)
						} else {
							record(lat.others, d)
						}
					}
				} else {
					r, err = lim.AllowN(ctx, key, 1, ls...)
				}
				row.decisions++
				if mine {
					row.victim++
				}
				if err != nil {
					row.errors++
					continue
				}
				if recov != nil && mine {
					recov[g].note(r.Source, t0, start, time.Duration(in.hit.Load()))
				}
				if int(r.Source) < numSources {
					row.sources[r.Source]++
					if mine {
						row.victimSources[r.Source]++
					}
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	injected := make(chan error, 1)
	go func() { injected <- in.run(runCtx, ctx) }()
	probed := probe.start(runCtx, start, in)

	// Count rows by time; sample the victim's breakers every sampleEvery
	// and at each new row, so that what changed is put in its row.
	fine := min(s.interval/10, sampleEvery)
	tick := time.NewTicker(fine)
	steps := make([]watchStep, nRows)
	for r := range steps {
		steps[r].reasons = map[hybrid.Reason]int64{}
	}
	var samples []sample
	var lastSample time.Duration
	var lastRow int64
	last := start
	note := func(el time.Duration, row, into int64) {
		lastSample = el
		st := watch.sample(h)
		steps[row].degraded = max(steps[row].degraded, st.degraded)
		steps[into].opened += st.opened
		steps[into].closed += st.closed
		for r, n := range st.reasons {
			steps[into].reasons[r] += n
		}
		samples = append(samples, sample{at: el, degraded: st.degraded})
	}
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case now := <-tick.C:
			el := now.Sub(start)
			row := min(int64(el/s.interval), int64(nRows-1))
			cur.Store(row)
			if el-lastSample >= sampleEvery || row != lastRow {
				// What changed since the last sample happened in the row
				// of that sample.
				note(el, row, lastRow)
			}
			lastRow = row
			e.prog.add(now.Sub(last))
			last = now
		}
	}
	tick.Stop()
	elapsed := time.Since(start)
	note(elapsed, lastRow, lastRow)
	cancel()
	injErr := <-injected
	<-probed
	if ctx.Err() != nil {
		return fmt.Errorf("bench: interrupted: %w", ctx.Err())
	}
	if injErr != nil {
		return fmt.Errorf("bench: -fault %s on %s: %w", s.fault, victimName, injErr)
	}
	events, flaps := in.done()

	sum := faultSummary{
		Type: "fault", Fault: s.fault, Node: victimName, Nodes: e.cl.kind, HotKeys: owned,
		Instances: s.instances, Concurrency: s.concurrency, Seconds: elapsed.Seconds(),
		FaultAt: faultAt.Seconds(), Flaps: flaps, Sources: map[string]int64{},
	}
	if owned == nil {
		sum.HotKeys = []string{}
	}
	if s.fault == "slow" {
		v := float64(slowDelay()) / float64(time.Millisecond)
		sum.SlowMs = &v
	}
	var faultTime time.Duration = -1
	for _, ev := range events {
		if faultTime < 0 {
			faultTime = ev.at
			sum.FaultAt = ev.at.Seconds()
		}
		if ev.back {
			v := ev.at.Seconds()
			sum.BackAt = &v
		}
	}
	sum.DegradedMs, sum.RecoveredMs = breakerTimes(samples, faultTime, sum.BackAt, s.instances)
	if s.fault == faultFailover {
		// The dead master's breaker has no keys left to close it: the
		// recovery is the keys' answers, timed from the kill.
		sum.RecoveredMs = nil
		events = failoverTimes(&sum, events, recov, probe, time.Duration(in.hit.Load()))
	}
	moveFigures(&sum, probe, time.Duration(in.hit.Load()), time.Duration(in.healed.Load()), elapsed)

	// The fault's rows: from the one it was injected in to the one before
	// the node's return (to the end for kill).
	winFrom, winTo := nRows, nRows
	if faultTime >= 0 {
		winFrom = min(int(faultTime/s.interval), nRows-1)
		if sum.BackAt != nil {
			winTo = min(max(int(*sum.BackAt/s.interval.Seconds()), winFrom+1), nRows)
		}
	}
	var winVictim, winFailed int64
	winLat := newHist()

	timeline := make([]second, nRows)
	for r := range timeline {
		rowStart := time.Duration(r) * s.interval
		width := min(s.interval, elapsed-rowStart)
		st := steps[r]
		t := second{Type: "second", Fault: s.fault, T: rowStart.Seconds(), Interval: s.interval.Seconds(),
			Sources: map[string]int64{}, Degraded: st.degraded, Opened: st.opened, Closed: st.closed,
			VictimSources: map[string]int64{}, VictimReasons: map[string]int64{}, Events: []string{}}
		for why, n := range st.reasons {
			t.VictimReasons[why.String()] = n
		}
		for g := range rows {
			fr := &rows[g][r]
			t.Decisions += fr.decisions
			t.Errors += fr.errors
			t.VictimDecisions += fr.victim
			for src, n := range fr.sources {
				if n > 0 {
					t.Sources[hybrid.Source(src).String()] += n
				}
			}
			for src, n := range fr.victimSources {
				if n > 0 {
					t.VictimSources[hybrid.Source(src).String()] += n
				}
				if failureMode(hybrid.Source(src)) {
					t.VictimFailed += n
				}
			}
		}
		if width > 0 {
			t.DecisionsPerSec = float64(t.Decisions) / width.Seconds()
		}
		if t.VictimDecisions > 0 {
			t.VictimFailedPct = 100 * float64(t.VictimFailed) / float64(t.VictimDecisions)
		}
		t.P99us = quantileUs(rowLat[r].all, 99)
		t.VictimP99us = quantileUs(rowLat[r].victim, 99)
		t.OthersP99us = quantileUs(rowLat[r].others, 99)
		for _, ev := range events {
			if int(ev.at/s.interval) == r || (r == nRows-1 && int(ev.at/s.interval) > r) {
				t.Events = append(t.Events, ev.label)
			}
		}
		timeline[r] = t
		sum.Decisions += t.Decisions
		sum.Errors += t.Errors
		sum.Opened += t.Opened
		sum.VictimDecisions += t.VictimDecisions
		sum.VictimFailed += t.VictimFailed
		for src, n := range t.Sources {
			sum.Sources[src] += n
		}
		if r >= winFrom && r < winTo {
			winVictim += t.VictimDecisions
			winFailed += t.VictimFailed
			winLat.Merge(rowLat[r].victim)
		}
	}
	if winVictim > 0 {
		sum.FaultVictimPct = 100 * float64(winFailed) / float64(winVictim)
	}
	sum.FaultVictimP99us = quantileUs(winLat, 99)

	e.prog.finish()
	if err := printFault(stdout, s.json, timeline, sum); err != nil {
		return err
	}
	path := filepath.Join(s.out, faultChart)
	var marks []marker
	for _, ev := range events {
		if ev.quiet {
			continue
		}
		c := color.Color(color.RGBA{R: 200, A: 255})
		if ev.back {
			c = color.RGBA{G: 140, A: 255}
		}
		marks = append(marks, marker{x: ev.at.Seconds(), label: ev.label, color: c, row: len(marks)})
	}
	return e.writeChart(path, stdout, s.json, faultPlots(timeline, sum, marks)...)
}

// ringOwners returns hybrid's node names and the index of the node each
// key is placed on, from a ring built as hybrid builds its own.
func ringOwners(cl *cluster) ([]string, func(string) int, error) {
	ring, err := shard.New(shard.Config{}, cl.names...)
	if err != nil {
		return nil, nil, fmt.Errorf("bench: ring: %w", err)
	}
	index := map[string]int{}
	for i, n := range cl.names {
		index[n] = i
	}
	return cl.names, func(key string) int {
		name, _ := ring.Locate(key)
		return index[name]
	}, nil
}

// locateHotKeys finds the node of each hot key: it sends one request per
// key through the first instance, before any other traffic, and sees
// whose Stats().Nodes[].Calls moved. (The Redis keys cannot tell: a
// bucket of 1e9/s refills, and expires, within a millisecond.) It returns,
// per key, the index of its node in cl.names, -1 where no node's calls
// moved. A cancelled ctx is an interruption, not a key of no node's: hybrid
// answers it from the failure mode, which moves no node's calls.
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
		owners[j] = -1
		before := calls()
		if _, err := lim.AllowN(ctx, k, 1, limits...); err != nil {
			return nil, fmt.Errorf("bench: warming %s: %w", k, err)
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("bench: interrupted: %w", err)
		}
		after := calls()
		for i, name := range cl.names {
			if after[name] > before[name] {
				owners[j] = i
				break
			}
		}
	}
	return owners, nil
}

// printFault writes the timeline and the summary: a table, or one JSON
// object per row and one for the summary.
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
	var cols []string
	for _, src := range sourceNames() {
		if sum.Sources[src] > 0 {
			cols = append(cols, src)
		}
	}
	tw := newTable(w)
	fmt.Fprintf(tw, "t\tdecisions/s\t%s\terrors\tp99\tdegraded\topened/closed\tvictim fm\tvictim p99\tothers p99\tevent\n", strings.Join(withSuffix(cols, "/s"), "\t"))
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

func withSuffix(names []string, suffix string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = n + suffix
	}
	return out
}

// perSec turns a count of a row into a rate.
func perSec(n int64, t second) float64 {
	if t.Decisions == 0 || t.DecisionsPerSec == 0 {
		return 0
	}
	return float64(n) * t.DecisionsPerSec / float64(t.Decisions)
}

// faultPlots draws decisions/s by Source over time and p99 over time (of
// every decision, and of the victim's answers from Redis), with the
// fault marked.
func faultPlots(timeline []second, sum faultSummary, marks []marker) []*plot.Plot {
	// The y labels stay short: gonum centres a log axis's label at the
	// linear middle of its range, near the top, and pads the plot for it.
	title := fmt.Sprintf("decisions/s by Source, -fault %s of %s; errors returned to callers: %d\n(log scale; 0 drawn at 1)", sum.Fault, sum.Node, sum.Errors)
	rate := newPlot(title, "time (s)", "decisions/s")
	useLogY(rate)
	lat := newPlot("p99 decision latency (log scale; 0 drawn at 0.01 µs)", "time (s)", "p99 (µs)")
	useLogY(lat)
	mid := func(t second) float64 { return t.T + t.Interval/2 }
	var total, p99, vp99 plotter.XYs
	anyVictim := false
	for _, t := range timeline {
		total = append(total, plotter.XY{X: mid(t), Y: positive(t.DecisionsPerSec)})
		p99 = append(p99, plotter.XY{X: mid(t), Y: atLeast(t.P99us, 0.01)})
		vp99 = append(vp99, plotter.XY{X: mid(t), Y: atLeast(t.VictimP99us, 0.01)})
		anyVictim = anyVictim || t.VictimP99us > 0
	}
	_ = addLine(rate, "all", 0, true, total)
	entries := 1
	for i, src := range sourceNames() {
		if sum.Sources[src] == 0 {
			continue
		}
		var xys plotter.XYs
		for _, t := range timeline {
			xys = append(xys, plotter.XY{X: mid(t), Y: positive(perSec(t.Sources[src], t))})
		}
		_ = addLine(rate, src, i+1, false, xys)
		entries++
	}
	_ = addLine(lat, "p99", 0, false, p99)
	latEntries := 1
	if anyVictim {
		_ = addLine(lat, "p99 of the victim's Redis answers", 1, false, vp99)
		latEntries++
	}
	headroom(rate, entries)
	headroom(lat, latEntries)
	for _, m := range marks {
		// Labelled at their top, the markers need no legend entry.
		rate.Add(m)
		lat.Add(m)
	}
	// The time axis spans the whole run even where a row is empty.
	end := 0.0
	if n := len(timeline); n > 0 {
		end = timeline[n-1].T + timeline[n-1].Interval
	}
	for _, p := range []*plot.Plot{rate, lat} {
		p.X.Min, p.X.Max = 0, math.Max(end, p.X.Max)
		p.X.Tick.Marker = stepTicks{}
	}
	return []*plot.Plot{rate, lat}
}
