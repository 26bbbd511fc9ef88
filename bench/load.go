package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"time"

	"github.com/hybridlimit/hybridlimit/hybrid"
)

// loadSteps are the offered loads of -sweep load, decisions/s, in order.
var loadSteps = []int64{
	5_000, 10_000, 20_000, 30_000, 50_000, 75_000, 100_000, 150_000, 200_000, 300_000,
	500_000, 750_000, 1_000_000, 1_500_000, 2_000_000, 3_000_000, 5_000_000,
}

// Settings of -sweep load.
const (
	loadDuration  = 2 * time.Second        // -duration's default: a step's arrival window
	loadWorkers   = 512                    // -concurrency's default
	loadWarmup    = 500 * time.Millisecond // the most a system warms up, at the first step's rate
	loadDrain     = time.Second            // after the window, queued arrivals may still start
	loadQueue     = 1 << 16                // arrivals waiting at most; one more saturates the step
	latencyTarget = time.Millisecond       // the seed's requirement: p99 below it
	// saturationP99 ends a sweep: past hybrid's default Timeout hybridlimit
	// answers from its failure mode and a step measures the queue.
	saturationP99 = hybrid.DefaultTimeout
	minAchieved   = 0.9 // ends a sweep: calls returned at under this share of the arrival rate
	// generatorBound is the most the generator may add at p99 (its lag, or
	// alone its calls to noSystem) and still keep its schedule; half of
	// latencyTarget, above what it took alone on a quiet 2-core machine.
	generatorBound = latencyTarget / 2
)

// sysGenerator names the rows of the generator alone, against noSystem.
const sysGenerator = "generator"

// What limited a step (loadRow.LimitedBy).
const (
	limitedNone      = ""
	limitedSystem    = "system"
	limitedGenerator = "generator"
)

// loadStepsUpTo returns the steps up to upTo decisions/s.
func loadStepsUpTo(upTo int64) []int64 {
	return slices.DeleteFunc(slices.Clone(loadSteps), func(r int64) bool { return r > upTo })
}

// runLoad runs -sweep load: the table, the highest-load lines and the chart.
func runLoad(ctx context.Context, e *env, stdout io.Writer) (err error) {
	s := e.s
	steps := loadStepsUpTo(s.maxLoad)
	planned := time.Duration(len(s.workloads)) * (time.Duration(len(steps)*len(systemNames)+1)*s.duration + time.Duration(len(systemNames))*warmup(s.duration))
	e.prog = newProgress(e.stderr, s.quiet, planned)
	rep := newLoadReport(stdout, s.json)
	defer func() {
		e.prog.finish()
		err = errors.Join(err, rep.flush())
	}()
	for _, name := range s.workloads {
		if err := sweepLoad(ctx, e, newWorkload(name, s), steps, rep); err != nil {
			return err
		}
	}
	if err := rep.flush(); err != nil {
		return err
	}
	return e.writeChart(filepath.Join(s.out, loadChart), stdout, s.json, loadPlots(s.workloads, rep.rows)...)
}

func warmup(window time.Duration) time.Duration { return min(window, loadWarmup) }

func interrupted(ctx context.Context) error { return fmt.Errorf("bench: interrupted: %w", ctx.Err()) }

// sweepLoad steps one workload's offered load for both systems, built once
// on emptied nodes and warmed up; a system stops at its first limited step.
func sweepLoad(ctx context.Context, e *env, w workload, steps []int64, rep *loadReport) (err error) {
	if err := e.cl.flush(ctx); err != nil {
		return err
	}
	systems := map[string]system{}
	defer func() {
		for _, sys := range systems {
			err = errors.Join(err, sys.close())
		}
	}()
	for _, name := range systemNames {
		sys, err := e.newSystem(name, e.s.leaseFraction, w.keys.len())
		if err != nil {
			return err
		}
		systems[name] = sys
		e.prog.describe(w.name + "/" + name + " warm-up")
		var st *stepStats
		labelled(ctx, name, w.name, func(ctx context.Context) {
			st = offer(ctx, sys, w, e.stepConfig(float64(steps[0]), warmup(e.s.duration)))
		})
		e.prog.add(st.window)
		if ctx.Err() != nil {
			return interrupted(ctx)
		}
	}
	stepping := systemNames
	for i, rate := range steps {
		var rows []loadRow
		needs := i == 0 // the generator's floor, beside the light load
		for _, name := range stepping {
			row, err := e.loadStep(ctx, w, name, systems[name], rate)
			if err != nil {
				return err
			}
			row.judge(nil)
			needs = needs || row.LimitedBy != limitedNone || row.behind || row.P99us >= us(latencyTarget)
			rows = append(rows, row)
		}
		if len(rows) == 0 {
			return nil
		}
		var alone *loadRow
		if needs {
			a, err := e.loadStep(ctx, w, sysGenerator, noSystem{}, rate)
			if err != nil {
				return err
			}
			a.judgeGenerator()
			alone = &a
		}
		stepping = nil
		for _, r := range rows {
			if r.judge(alone); r.LimitedBy == limitedNone {
				stepping = append(stepping, r.System)
			}
			if err := rep.add(r); err != nil {
				return err
			}
		}
		if alone != nil {
			if err := rep.add(*alone); err != nil {
				return err
			}
		}
	}
	return nil
}

// stepConfig is a step of the run's settings at rate for window.
func (e *env) stepConfig(rate float64, window time.Duration) stepConfig {
	return stepConfig{rate: rate, window: window, workers: e.s.concurrency, drain: loadDrain, queue: loadQueue, seed: uint64(rate)}
}

// loadStep runs w against sys at rate decisions/s; its row is not yet judged.
func (e *env) loadStep(ctx context.Context, w workload, name string, sys system, rate int64) (loadRow, error) {
	e.prog.describe(fmt.Sprintf("%s/%s %d/s", w.name, name, rate))
	m := e.startMeters(ctx, sys)
	var st *stepStats
	labelled(ctx, name, w.name, func(ctx context.Context) { st = offer(ctx, sys, w, e.stepConfig(float64(rate), e.s.duration)) })
	cost := m.since(ctx, e, sys)
	e.prog.add(st.elapsed)
	if ctx.Err() != nil {
		return loadRow{}, interrupted(ctx)
	}
	e.warnErrors(ctx, fmt.Sprintf("%s/%s at %d/s", w.name, name, rate), &st.tally)
	r := loadRow{
		Type: "load", setup: newSetup(e, w, name, e.s.leaseFraction),
		OfferedPerSec: float64(rate), Scheduled: st.scheduled, Decisions: st.decisions, Abandoned: st.abandoned,
		Seconds: st.elapsed.Seconds(), AchievedPct: 100 * st.achieved(),
		P50us: quantileUs(st.latency, 50), P99us: quantileUs(st.latency, 99),
		P999us: quantileUs(st.latency, 99.9), MaxUs: float64(st.latency.Max()) / 1e3,
		GeneratorLagP99us: quantileUs(st.lag, 99), overflow: st.overflow,
		Admitted: st.admitted, Errors: st.errors, Sources: st.sourceNames(),
	}
	if st.decisions > 0 {
		r.DecisionsPerSec = float64(st.decisions) / st.elapsed.Seconds()
		r.RedisCallsPerDecision, r.ClientCPUus, r.RedisCPUus = cost.perDecision(st.decisions)
	}
	if name == sysGenerator {
		r.Sources, r.RedisCPUus = map[string]int64{}, nil // it decides nothing, and Redis is idle
	}
	return r, nil
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// saturation says why a step did not keep up or passed saturationP99, or "".
func saturation(r *loadRow) string {
	switch {
	case r.overflow:
		return fmt.Sprintf("over %d arrivals waited for a worker", loadQueue)
	case r.Abandoned > 0:
		return fmt.Sprintf("%d arrivals not started within %v of the window's end", r.Abandoned, loadDrain)
	case r.AchievedPct < 100*minAchieved:
		return fmt.Sprintf("calls returned at %.0f%% of the arrival rate", r.AchievedPct)
	case r.P99us > us(saturationP99):
		return fmt.Sprintf("p99 above %v", saturationP99)
	}
	return ""
}

// judge sets what limited a system's step and why: the generator if alone
// (its step at the same rate, nil: not run) was limited, else the system if
// saturated, else nothing; the reason says if the generator was behind.
func (r *loadRow) judge(alone *loadRow) {
	r.behind = r.GeneratorLagP99us > us(generatorBound) || alone != nil && alone.behind
	r.LimitedBy, r.Reason = limitedSystem, saturation(r)
	switch {
	case alone != nil && alone.LimitedBy != limitedNone:
		r.LimitedBy, r.Reason = limitedGenerator, "the generator alone cannot offer this load: "+alone.Reason
	case r.Reason != "":
	case r.behind:
		r.LimitedBy, r.Reason = limitedNone, "the generator fell behind: lag p99 "+latency(r.GeneratorLagP99us)
		if alone != nil {
			r.Reason += fmt.Sprintf(", alone lag p99 %s, p99 %s", latency(alone.GeneratorLagP99us), latency(alone.P99us))
		}
	default:
		r.LimitedBy = limitedNone
	}
}

// judgeGenerator judges the generator alone; behind: lag or p99 > generatorBound.
func (r *loadRow) judgeGenerator() {
	r.behind = r.GeneratorLagP99us > us(generatorBound) || r.P99us > us(generatorBound)
	r.LimitedBy, r.Reason = limitedGenerator, saturation(r)
	if r.Reason == "" {
		r.LimitedBy = limitedNone
		if r.behind {
			r.Reason = fmt.Sprintf("behind: lag p99 %s, p99 %s", latency(r.GeneratorLagP99us), latency(r.P99us))
		}
	}
}
