package main

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"slices"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

// sweepFractions are -sweep lease's Lease.MaxFraction values, 0 (off) first.
var sweepFractions = []float64{0, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.05}

// sweepChart is the file -sweep lease writes in -out.
const sweepChart = "lease-sweep.svg"

// runSweep runs -sweep lease: the table and the chart.
func runSweep(ctx context.Context, e *env, stdout io.Writer) (err error) {
	s := e.s
	e.prog = newProgress(e.stderr, s.quiet, time.Duration(len(s.workloads)*(1+len(sweepFractions)))*s.duration)
	rep := newReport(stdout, s.json, true)
	defer func() {
		e.prog.finish()
		err = errors.Join(err, rep.flush())
	}()
	var all []result
	for _, name := range s.workloads {
		w := newWorkload(name, s)
		for i, f := range append([]float64{0}, sweepFractions...) {
			sys := sysHybrid
			if i == 0 {
				sys = sysRedisRate
			}
			res, err := measureOne(ctx, e, w, sys, f)
			if err != nil {
				return err
			}
			if err := rep.add(res); err != nil {
				return err
			}
			all = append(all, res)
		}
	}
	if err := rep.flush(); err != nil {
		return err
	}
	return e.writeChart(filepath.Join(s.out, sweepChart), stdout, s.json, sweepPlots(s.workloads, all)...)
}

// sweepPlots draws decisions/s and admitted/ideal against lease size.
func sweepPlots(workloads []string, all []result) []*plot.Plot {
	const xLabel = "Lease.MaxFraction (largest lease, % of the limit)"
	rate := newPlot("decisions/s against lease size (log scale)", xLabel, "decisions/s")
	useLogY(rate)
	acc := newPlot("admitted/ideal against lease size, with the over-admission bound", xLabel, "admitted/ideal (%)")
	labels := make([]string, len(sweepFractions))
	for i, f := range sweepFractions {
		labels[i] = leaseLabel(f)
	}
	for wi, name := range workloads {
		var hyb, base, pct, bound plotter.XYs
		for _, r := range all {
			switch {
			case r.Workload != name:
			case r.System == sysRedisRate:
				base = plotter.XYs{{X: 0, Y: positive(r.DecisionsPerSec)}, {X: float64(len(sweepFractions) - 1), Y: positive(r.DecisionsPerSec)}}
			default:
				x := float64(max(0, slices.Index(sweepFractions, r.LeaseFraction)))
				hyb = append(hyb, plotter.XY{X: x, Y: positive(r.DecisionsPerSec)})
				pct = append(pct, plotter.XY{X: x, Y: r.AdmittedPctOfIdeal})
				bound = append(bound, plotter.XY{X: x, Y: 100 + r.LeaseBoundPct})
			}
		}
		if len(hyb) == 0 {
			continue
		}
		_ = addLine(rate, name+" hybridlimit", 2*wi, false, hyb) // errors only on empty series
		if base != nil {
			_ = addLine(rate, name+" redis_rate", 2*wi+1, true, base)
		}
		_ = addLine(acc, name+" hybridlimit", 2*wi, false, pct)
		_ = addLine(acc, name+" bound", 2*wi+1, true, bound)
	}
	for _, p := range []*plot.Plot{rate, acc} {
		headroom(p, 2*len(workloads))
		p.NominalX(labels...)
		p.X.Label.Text = xLabel
	}
	return []*plot.Plot{rate, acc}
}
