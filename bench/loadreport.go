package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

// loadChart is the file -sweep load writes in -out.
const loadChart = "latency-throughput.svg"

// loadReport writes the rows of -sweep load: one JSON object per row as
// each arrives, or, by flush, a table sorted by workload, system and
// offered load followed by the highest load each system sustains with p99
// below latencyTarget. It keeps the rows for the chart.
type loadReport struct {
	json bool
	enc  *json.Encoder
	w    io.Writer
	rows []loadRow
	done bool // flushed
}

func newLoadReport(w io.Writer, asJSON bool) *loadReport {
	r := &loadReport{json: asJSON, w: w}
	if asJSON {
		r.enc = json.NewEncoder(w)
	}
	return r
}

func (r *loadReport) add(row loadRow) error {
	r.rows = append(r.rows, row)
	if r.json {
		return r.enc.Encode(row)
	}
	return nil
}

// ordered returns the rows sorted by workload (in the order they ran),
// system (hybridlimit, redis_rate, the generator) and offered load.
func (r *loadReport) ordered() []loadRow {
	workloads := workloadsOf(r.rows)
	systems := append(slices.Clone(systemNames), sysGenerator)
	rows := slices.Clone(r.rows)
	slices.SortStableFunc(rows, func(a, b loadRow) int {
		return cmp.Or(
			cmp.Compare(slices.Index(workloads, a.Workload), slices.Index(workloads, b.Workload)),
			cmp.Compare(slices.Index(systems, a.System), slices.Index(systems, b.System)),
			cmp.Compare(a.OfferedPerSec, b.OfferedPerSec))
	})
	return rows
}

// flush writes the table and the highest-load lines, once; it does
// nothing for JSON.
func (r *loadReport) flush() error {
	if r.json || r.done || len(r.rows) == 0 {
		return nil
	}
	r.done = true
	rows := r.ordered()
	tw := newTable(r.w)
	fmt.Fprintln(tw, "workload\tsystem\toffered/s\tachieved/s\tp50\tp99\tp99.9\tmax\tgen lag p99\tredis calls/decision\tcpu/decision client+redis\tsources\tlimited by")
	for _, row := range rows {
		limited := "-"
		switch {
		case row.LimitedBy != limitedNone:
			limited = row.LimitedBy + ": " + row.Reason
		case row.Reason != "":
			limited = "- (" + row.Reason + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.0f\t%s\t%s\t%s\t%s\t%s\t%.3f\t%s\t%s\t%s\n",
			row.Workload, row.System, row.OfferedPerSec, row.DecisionsPerSec,
			latency(row.P50us), latency(row.P99us), latency(row.P999us), latency(row.MaxUs), latency(row.GeneratorLagP99us),
			row.RedisCallsPerDecision, cpuLabel(row.ClientCPUus, row.RedisCPUus), sourceMix(row.Sources), limited)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return writeHighest(r.w, rows)
}

// writeHighest writes, per workload, the highest offered load each system
// sustained with p99 below latencyTarget. rows are in ordered's order.
func writeHighest(w io.Writer, rows []loadRow) error {
	if _, err := fmt.Fprintln(w); err != nil {
		return err
	}
	for _, wl := range workloadsOf(rows) {
		var parts []string
		for _, sys := range systemNames {
			var own []loadRow
			for _, row := range rows {
				if row.Workload == wl && row.System == sys {
					own = append(own, row)
				}
			}
			if len(own) > 0 {
				parts = append(parts, sys+" "+describeHighest(own))
			}
		}
		if _, err := fmt.Fprintf(w, "highest load with p99 < %d ms, %s: %s\n", latencyTarget.Milliseconds(), wl, strings.Join(parts, ", ")); err != nil {
			return err
		}
	}
	return nil
}

// workloadsOf lists the workloads of rows, in order of first appearance.
func workloadsOf(rows []loadRow) []string {
	var out []string
	for _, row := range rows {
		if !slices.Contains(out, row.Workload) {
			out = append(out, row.Workload)
		}
	}
	return out
}

// describeHighest says what highestUnderTarget found in one system's
// rows: "20000/s"; "≥ 300000/s (...)" where that is a lower bound; or
// why there is no figure.
func describeHighest(rows []loadRow) string {
	best, stop := highestUnderTarget(rows)
	if stop == nil {
		return fmt.Sprintf("≥ %.0f/s (the highest step run)", best)
	}
	at := fmt.Sprintf("at %.0f/s", stop.OfferedPerSec)
	switch {
	case stop.LimitedBy == limitedNone && stop.behind:
		at += fmt.Sprintf(" p99 %s, %s", latency(stop.P99us), stop.Reason)
	case stop.LimitedBy == limitedNone:
		at += fmt.Sprintf(" p99 %s", latency(stop.P99us))
	default:
		at += " " + stop.LimitedBy + ": " + stop.Reason
	}
	lower := stop.LimitedBy == limitedGenerator || stop.LimitedBy == limitedNone && stop.behind
	switch {
	case best == 0 && lower:
		return "not measured (" + at + ")"
	case best == 0:
		return "none (" + at + ")"
	case lower:
		return fmt.Sprintf("≥ %.0f/s (%s)", best, at)
	}
	return fmt.Sprintf("%.0f/s (%s)", best, at)
}

// loadPlots draws, per workload, p99 against offered load on log scales:
// a line per system, the generator alone dashed where it ran, and the
// target dashed across.
func loadPlots(workloads []string, rows []loadRow) []*plot.Plot {
	var plots []*plot.Plot
	for _, wl := range workloads {
		p := newPlot(wl+": p99 latency against offered load (log scales)", "offered load (decisions/s)", "p99 from the arrival's due time (µs)")
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = offeredTicks{}
		useLogY(p)
		lines := 0
		for i, sys := range append(slices.Clone(systemNames), sysGenerator) {
			var xys plotter.XYs
			for _, row := range rows {
				if row.Workload == wl && row.System == sys {
					xys = append(xys, plotter.XY{X: row.OfferedPerSec, Y: positive(row.P99us)})
				}
			}
			if len(xys) == 0 {
				continue
			}
			slices.SortFunc(xys, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
			name := sys + " p99"
			if sys == sysGenerator {
				name = "the generator alone, p99"
			}
			// The errors of addLine are for empty series, which these are not.
			_ = addLine(p, name, i, sys == sysGenerator, xys)
			lines++
		}
		if lines == 0 {
			continue
		}
		if p.X.Min == p.X.Max {
			p.X.Min, p.X.Max = p.X.Min/2, p.X.Max*2 // one step: a log axis needs a range
		}
		target := us(latencyTarget)
		_ = addLine(p, fmt.Sprintf("target: p99 < %d ms", latencyTarget.Milliseconds()), lines+1, true,
			plotter.XYs{{X: p.X.Min, Y: target}, {X: p.X.Max, Y: target}})
		headroom(p, lines+1)
		plots = append(plots, p)
	}
	return plots
}

// offeredTicks marks the steps of -sweep load on an offered-load axis,
// labelled 5k, 10k, 20k, ...
type offeredTicks struct{}

func (offeredTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for _, r := range loadSteps {
		if v := float64(r); v >= lo*0.9999 && v <= hi*1.0001 {
			ticks = append(ticks, plot.Tick{Value: v, Label: siLabel(v)})
		}
	}
	return ticks
}
