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
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9/logging"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/hybridlimit/hybridlimit/hybrid"
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

// second is one row of the fault timeline. Its JSON form is documented in
// doc.go.
type second struct {
	Type            string           `json:"type"`
	Fault           string           `json:"fault"`
	T               float64          `json:"t_s"`
	Interval        float64          `json:"interval_s"`
	Decisions       int64            `json:"decisions"`
	DecisionsPerSec float64          `json:"decisions_per_sec"`
	Sources         map[string]int64 `json:"sources"`
	Errors          int64            `json:"errors"`
	P99us           float64          `json:"p99_us"`
	Degraded        int              `json:"degraded_instances"`
	Events          []string         `json:"events"`
}

// faultSummary is the last line of a fault run. Its JSON form is
// documented in doc.go.
type faultSummary struct {
	Type        string           `json:"type"`
	Fault       string           `json:"fault"`
	Node        string           `json:"node"`
	Nodes       string           `json:"nodes"`
	HotKeys     []string         `json:"hot_keys"`
	Instances   int              `json:"instances"`
	Concurrency int              `json:"concurrency"`
	Seconds     float64          `json:"seconds"`
	FaultAt     float64          `json:"fault_at_s"`
	BackAt      *float64         `json:"back_at_s"`
	DegradedMs  *float64         `json:"degraded_after_ms"`
	RecoveredMs *float64         `json:"recovered_after_ms"`
	Decisions   int64            `json:"decisions"`
	Errors      int64            `json:"errors"`
	Sources     map[string]int64 `json:"sources"`
}

// faultRow is what one goroutine counted in one row of the timeline.
type faultRow struct {
	decisions, errors int64
	sources           [numSources]int64
	latency           hist
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

// event is something the fault injector did, at a time since the start.
type event struct {
	at    time.Duration
	label string
	back  bool // the node answers again from here
}

// runFault drives a mix of hot keys (half the goroutines) and Zipf keys
// (the other half) through -instances Limiters for -duration; at a third
// of it, it kills, pauses or restarts the embedded node that owns the
// most hot keys (a paused node is resumed at two thirds). It prints the
// timeline, a summary, and writes the chart.
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
	h, err := newHybrid(e.cl, s.instances, s.leaseFraction, e.log)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, h.close()) }()

	hot := hotKeys()
	hotLimit, zipfLimit := s.workloadLimit("hot"), s.workloadLimit("zipf")
	zipfW := newWorkload("zipf", s)
	victim, owned, err := locateHotKeys(ctx, e.cl, h, hot, hotLimit)
	if err != nil {
		return err
	}
	victimName := e.cl.names[victim]
	e.prog.describe("-fault " + s.fault + " " + victimName)

	faultAt := s.duration / 3
	backAt := 2 * s.duration / 3
	nRows := int((s.duration + s.interval - 1) / s.interval)
	rows := make([][]faultRow, s.concurrency)
	var cur atomic.Int64 // the row being counted
	perG := max(1, maxDecisions/s.concurrency)

	runCtx, cancel := context.WithTimeout(ctx, s.duration)
	defer cancel()
	stop := runCtx.Done()
	start := time.Now()
	var wg sync.WaitGroup
	for g := range s.concurrency {
		rows[g] = make([]faultRow, nRows)
		wg.Go(func() {
			var p *picker
			if g%2 == 1 {
				p = zipfW.picker(uint64(g) + 1)
			}
			for i := 0; i < perG; i++ {
				if i%16 == 0 {
					select {
					case <-stop:
						return
					default:
					}
				}
				key, l := hot[(g/2+i)%len(hot)], hotLimit
				if p != nil {
					key, l = zipfW.keys[p.next()], zipfLimit
				}
				row := &rows[g][cur.Load()]
				var r hybrid.Result
				var err error
				if i%8 == 0 {
					t0 := time.Now()
					r, err = h.lims[(g+i)%len(h.lims)].Allow(ctx, key, l)
					row.latency.add(time.Since(t0))
				} else {
					r, err = h.lims[(g+i)%len(h.lims)].Allow(ctx, key, l)
				}
				row.decisions++
				if err != nil {
					row.errors++
					continue
				}
				if int(r.Source) < numSources {
					row.sources[r.Source]++
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	// The injector sleeps until the fault, injects it and, for pause,
	// resumes the node later. It never outlives runFault: its sleeps end
	// with the run.
	var evMu sync.Mutex
	var events []event
	record := func(label string, back bool) {
		evMu.Lock()
		events = append(events, event{at: time.Since(start), label: label, back: back})
		evMu.Unlock()
	}
	injected := make(chan error, 1)
	go func() {
		injected <- inject(runCtx, e.cl, s.fault, victim, start, faultAt, backAt, record)
	}()

	// Count rows by time, sample the breakers of the faulted node.
	fine := min(s.interval/10, sampleEvery)
	tick := time.NewTicker(fine)
	degraded := make([]int, nRows)
	var samples []sample
	var lastSample time.Duration
	last := start
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case now := <-tick.C:
			el := now.Sub(start)
			row := min(int64(el/s.interval), int64(nRows-1))
			cur.Store(row)
			if el-lastSample >= sampleEvery {
				lastSample = el
				d := h.degraded(victimName)
				degraded[row] = max(degraded[row], d)
				samples = append(samples, sample{at: el, degraded: d})
			}
			e.prog.add(now.Sub(last))
			last = now
		}
	}
	tick.Stop()
	elapsed := time.Since(start)
	cancel()
	injErr := <-injected
	if ctx.Err() != nil {
		return fmt.Errorf("bench: interrupted: %w", ctx.Err())
	}
	if injErr != nil {
		return fmt.Errorf("bench: -fault %s on %s: %w", s.fault, victimName, injErr)
	}

	sum := faultSummary{
		Type: "fault", Fault: s.fault, Node: victimName, Nodes: e.cl.kind, HotKeys: owned,
		Instances: s.instances, Concurrency: s.concurrency, Seconds: elapsed.Seconds(),
		FaultAt: faultAt.Seconds(), Sources: map[string]int64{},
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

	timeline := make([]second, nRows)
	for r := range timeline {
		rowStart := time.Duration(r) * s.interval
		width := min(s.interval, elapsed-rowStart)
		t := second{Type: "second", Fault: s.fault, T: rowStart.Seconds(), Interval: s.interval.Seconds(),
			Sources: map[string]int64{}, Degraded: degraded[r], Events: []string{}}
		var lat hist
		for g := range rows {
			fr := &rows[g][r]
			t.Decisions += fr.decisions
			t.Errors += fr.errors
			for src, n := range fr.sources {
				if n > 0 {
					t.Sources[hybrid.Source(src).String()] += n
				}
			}
			lat.merge(&fr.latency)
		}
		if width > 0 {
			t.DecisionsPerSec = float64(t.Decisions) / width.Seconds()
		}
		t.P99us = lat.quantile(0.99)
		for _, ev := range events {
			if int(ev.at/s.interval) == r || (r == nRows-1 && int(ev.at/s.interval) > r) {
				t.Events = append(t.Events, ev.label)
			}
		}
		timeline[r] = t
		sum.Decisions += t.Decisions
		sum.Errors += t.Errors
		for src, n := range t.Sources {
			sum.Sources[src] += n
		}
	}

	e.prog.finish()
	if err := printFault(stdout, s.json, timeline, sum); err != nil {
		return err
	}
	path := filepath.Join(s.out, faultChart)
	var marks []marker
	for i, ev := range events {
		c := color.Color(color.RGBA{R: 200, A: 255})
		if ev.back {
			c = color.RGBA{G: 140, A: 255}
		}
		marks = append(marks, marker{x: ev.at.Seconds(), label: ev.label, color: c, row: i})
	}
	return e.writeChart(path, stdout, s.json, faultPlots(timeline, sum, marks)...)
}

// locateHotKeys finds the node of each hot key: it sends one request per
// key through the first instance, before any other traffic, and sees
// whose Stats().Nodes[].Calls moved. (The Redis keys cannot tell: a
// bucket of 1e9/s refills, and expires, within a millisecond.) It returns
// the index of the node owning the most hot keys (the first on a tie) and
// those keys, without the process prefix.
func locateHotKeys(ctx context.Context, cl *cluster, h *hybridSystem, hot []string, l hybrid.Limit) (int, []string, error) {
	lim := h.lims[0]
	calls := func() map[string]int64 {
		m := map[string]int64{}
		for _, n := range lim.Stats().Nodes {
			m[n.Name] = n.Calls
		}
		return m
	}
	owned := make([][]string, len(cl.names))
	for _, k := range hot {
		before := calls()
		if _, err := lim.Allow(ctx, k, l); err != nil {
			return 0, nil, fmt.Errorf("bench: warming %s: %w", k, err)
		}
		after := calls()
		for i, name := range cl.names {
			if after[name] > before[name] {
				owned[i] = append(owned[i], strings.TrimPrefix(k, keyPrefix()))
				break
			}
		}
	}
	best := 0
	for i := range owned {
		if len(owned[i]) > len(owned[best]) {
			best = i
		}
	}
	return best, owned[best], nil
}

// inject waits until faultAt after start, injects the fault into node i
// and, for pause, resumes it at backAt. It returns early, without
// injecting, when ctx ends first.
func inject(ctx context.Context, cl *cluster, fault string, i int, start time.Time, faultAt, backAt time.Duration, record func(string, bool)) error {
	sleepUntil := func(at time.Duration) bool {
		t := time.NewTimer(time.Until(start.Add(at)))
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		}
	}
	if !sleepUntil(faultAt) {
		return nil
	}
	name := cl.names[i]
	switch fault {
	case "kill":
		record("kill "+name, false)
		return cl.kill(i)
	case "pause":
		what := "pause (SIGSTOP) "
		if cl.servers == nil {
			what = "pause (emulated: closed) "
		}
		record(what+name, false)
		if err := cl.pause(i); err != nil {
			return err
		}
		// Resume even when the run ends first: a frozen node would hang
		// the clean-up (redistest resumes before it kills, too).
		sleepUntil(backAt)
		if err := cl.resume(i); err != nil {
			return err
		}
		record("resume "+name, true)
		return nil
	default:
		record("restart "+name, false)
		if err := cl.restart(context.WithoutCancel(ctx), i); err != nil {
			return err
		}
		record("back (empty) "+name, true)
		return nil
	}
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
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "t\tdecisions/s\t%s\terrors\tp99\tdegraded\tevent\n", strings.Join(withSuffix(cols, "/s"), "\t"))
	for _, t := range timeline {
		fmt.Fprintf(tw, "%.1fs\t%.0f", t.T, t.DecisionsPerSec)
		for _, c := range cols {
			fmt.Fprintf(tw, "\t%.0f", perSec(t.Sources[c], t))
		}
		fmt.Fprintf(tw, "\t%d\t%s\t%d/%d\t%s\n", t.Errors, latency(t.P99us), t.Degraded, sum.Instances, strings.Join(t.Events, "; "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nfault: %s of %s at %.2fs", sum.Fault, sum.Node, sum.FaultAt)
	if len(sum.HotKeys) > 0 {
		fmt.Fprintf(w, " (it owns %s and its share of the zipf keys)", strings.Join(sum.HotKeys, ", "))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "errors returned to callers: %d of %d decisions\n", sum.Errors, sum.Decisions)
	if sum.DegradedMs != nil {
		fmt.Fprintf(w, "every instance's breaker for the node open (its keys answered in process) %.0fms after the fault\n", *sum.DegradedMs)
	} else {
		fmt.Fprintln(w, "the node's breaker never opened on every instance")
	}
	switch {
	case sum.BackAt == nil:
		fmt.Fprintln(w, "the node stays down until the end")
	case sum.RecoveredMs != nil:
		fmt.Fprintf(w, "node back at %.2fs; every instance's breaker closed again %.0fms later\n", *sum.BackAt, *sum.RecoveredMs)
	default:
		fmt.Fprintf(w, "node back at %.2fs; some breaker still open at the end of the run\n", *sum.BackAt)
	}
	return nil
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

// faultPlots draws decisions/s by Source over time and p99 over time,
// with the fault marked.
func faultPlots(timeline []second, sum faultSummary, marks []marker) []*plot.Plot {
	// The y labels stay short: gonum centres a log axis's label at the
	// linear middle of its range, near the top, and pads the plot for it.
	title := fmt.Sprintf("decisions/s by Source, -fault %s of %s; errors returned to callers: %d\n(log scale; 0 drawn at 1)", sum.Fault, sum.Node, sum.Errors)
	rate := newPlot(title, "time (s)", "decisions/s")
	useLogY(rate)
	lat := newPlot("p99 decision latency (log scale; 0 drawn at 0.01 µs)", "time (s)", "p99 (µs)")
	useLogY(lat)
	mid := func(t second) float64 { return t.T + t.Interval/2 }
	var total, p99 plotter.XYs
	for _, t := range timeline {
		total = append(total, plotter.XY{X: mid(t), Y: positive(t.DecisionsPerSec)})
		p99 = append(p99, plotter.XY{X: mid(t), Y: atLeast(t.P99us, 0.01)})
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
	headroom(rate, entries)
	headroom(lat, 1)
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
