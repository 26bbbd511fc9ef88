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

// loadReport writes -sweep load's rows as JSON as they come, or by flush as
// a table and the highest-load lines; it keeps them for the chart.
type loadReport struct {
	enc  *json.Encoder // nil: a table
	w    io.Writer
	rows []loadRow
	done bool // flushed
}

func newLoadReport(w io.Writer, asJSON bool) *loadReport {
	if asJSON {
		return &loadReport{w: w, enc: json.NewEncoder(w)}
	}
	return &loadReport{w: w}
}

func (r *loadReport) add(row loadRow) error {
	r.rows = append(r.rows, row)
	if r.enc != nil {
		return r.enc.Encode(row)
	}
	return nil
}

// loadSystems are the systems of -sweep load's rows, in report order.
var loadSystems = append(slices.Clone(systemNames), sysGenerator)

// flush writes the table and the highest-load lines once; nothing for JSON.
func (r *loadReport) flush() error {
	if r.enc != nil || r.done || len(r.rows) == 0 {
		return nil
	}
	r.done = true
	tw := newTable(r.w)
	fmt.Fprintln(tw, "workload\tsystem\toffered/s\tachieved/s\tp50\tp99\tp99.9\tmax\tgen lag p99\tredis calls/decision\tcpu/decision client+redis\tsources\tlimited by")
	for _, wl := range workloadsOf(r.rows) {
		for _, sys := range loadSystems {
			for _, row := range rowsOf(r.rows, wl, sys) {
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
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(r.w)
	for _, wl := range workloadsOf(r.rows) {
		var parts []string
		for _, sys := range systemNames {
			if own := rowsOf(r.rows, wl, sys); len(own) > 0 {
				parts = append(parts, sys+" "+describeHighest(own))
			}
		}
		if _, err := fmt.Fprintf(r.w, "highest load with p99 < %d ms, %s: %s\n", latencyTarget.Milliseconds(), wl, strings.Join(parts, ", ")); err != nil {
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

// rowsOf returns the rows of one workload and system, in offered order.
func rowsOf(rows []loadRow, workload, system string) []loadRow {
	own := slices.DeleteFunc(slices.Clone(rows), func(r loadRow) bool { return r.Workload != workload || r.System != system })
	slices.SortStableFunc(own, func(a, b loadRow) int { return cmp.Compare(a.OfferedPerSec, b.OfferedPerSec) })
	return own
}

// describeHighest says, from one system's rows in offered order, up to which
// load every step kept p99 below latencyTarget and what ended them: "20000/s
// (at 30000/s p99 1.20ms)", "≥ ..." for a lower bound, or why there is none.
func describeHighest(rows []loadRow) string {
	i := slices.IndexFunc(rows, func(r loadRow) bool { return r.LimitedBy != limitedNone || r.P99us >= us(latencyTarget) })
	if i < 0 {
		return fmt.Sprintf("≥ %.0f/s (the highest step run)", rows[len(rows)-1].OfferedPerSec)
	}
	var best float64
	if i > 0 {
		best = rows[i-1].OfferedPerSec
	}
	stop := rows[i]
	at := fmt.Sprintf("at %.0f/s p99 %s", stop.OfferedPerSec, latency(stop.P99us))
	switch {
	case stop.LimitedBy != limitedNone:
		at = fmt.Sprintf("at %.0f/s %s: %s", stop.OfferedPerSec, stop.LimitedBy, stop.Reason)
	case stop.behind:
		at += ", " + stop.Reason
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

// loadPlots draws p99 against offered load per workload, on log scales.
func loadPlots(workloads []string, rows []loadRow) []*plot.Plot {
	var plots []*plot.Plot
	for _, wl := range workloads {
		p := newPlot(wl+": p99 latency against offered load (log scales)", "offered load (decisions/s)", "p99 from the arrival's due time (µs)")
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = offeredTicks{}
		useLogY(p)
		lines := 0
		for i, sys := range loadSystems {
			var xys plotter.XYs
			for _, row := range rowsOf(rows, wl, sys) {
				xys = append(xys, plotter.XY{X: row.OfferedPerSec, Y: positive(row.P99us)})
			}
			if len(xys) == 0 {
				continue
			}
			name := sys + " p99"
			if sys == sysGenerator {
				name = "the generator alone, p99"
			}
			_ = addLine(p, name, i, sys == sysGenerator, xys) // errors only on empty series
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

// offeredTicks marks loadSteps on an axis, labelled 5k, 10k, ...
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
