package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/hybridlimit/hybridlimit/hybrid"
)

// loadSteps are the offered loads of -sweep load, in decisions per second,
// in the order they run. -max-load cuts the list.
var loadSteps = []int64{
	5_000, 10_000, 20_000, 30_000, 50_000, 75_000, 100_000, 150_000, 200_000, 300_000,
	500_000, 750_000, 1_000_000, 1_500_000, 2_000_000, 3_000_000, 5_000_000,
}

// Settings of -sweep load.
const (
	loadDuration = 2 * time.Second // -duration's default: the arrival window of a step
	loadWorkers  = 512             // -concurrency's default: the workers that make the calls
	// loadWarmup is the most a system runs at the first step's rate
	// before its first step, unreported: connections, scripts, caches.
	loadWarmup = 500 * time.Millisecond
	// loadDrain is how long after a step's window the arrivals still
	// queued may start; those left are abandoned and the step saturated.
	loadDrain = time.Second
	// loadQueue is the most arrivals that wait for a worker; the next one
	// ends the step, saturated.
	loadQueue = 1 << 16
	// latencyTarget is the seed's requirement: p99 below it.
	latencyTarget = time.Millisecond
	// saturationP99 ends a system's sweep: past hybrid's default Timeout
	// hybridlimit answers from its failure mode, not from Redis, and a
	// step measures the queue. (10 ms ended sweeps at 5,000/s on a
	// machine whose other work took every processor.)
	saturationP99 = hybrid.DefaultTimeout
	// minAchieved ends a system's sweep: a step whose calls returned at
	// less than this share of the arrivals' rate did not keep up.
	minAchieved = 0.9
	// generatorBound is the most the generator may add at p99 and still
	// keep up with its schedule: the p99 of its lag releasing arrivals,
	// in a system's step or alone, and of its calls to noSystem alone.
	// Past it a p99 at or above latencyTarget may owe as much to the
	// generator as to the system (see judge). Half of latencyTarget: on
	// this 2-core machine, quiet, the generator alone had a p99 of
	// 300-540 µs from 5,000 to 100,000 arrivals/s (the hand-off to a
	// parked worker), its lag a p99 of 80-200 µs.
	generatorBound = latencyTarget / 2
)

// sysGenerator names the generator alone, against noSystem, in the rows
// of -sweep load: it runs after the systems at the first step and at
// each step where a system's row needs it to be judged.
const sysGenerator = "generator"

// What limited a step (loadRow.LimitedBy).
const (
	limitedNone      = ""
	limitedSystem    = "system"
	limitedGenerator = "generator"
)

// loadStepsUpTo returns the steps up to upTo decisions/s.
func loadStepsUpTo(upTo int64) []int64 {
	var out []int64
	for _, r := range loadSteps {
		if r <= upTo {
			out = append(out, r)
		}
	}
	return out
}

// runLoad runs -sweep load (sweepLoad) for each selected workload, prints
// the table and the highest-load lines, and writes the chart.
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

// warmup is how long a system warms up before its first step.
func warmup(window time.Duration) time.Duration { return min(window, loadWarmup) }

// interrupted is the error of a run cut short by ctx.
func interrupted(ctx context.Context) error { return fmt.Errorf("bench: interrupted: %w", ctx.Err()) }

// sweepLoad steps one workload's offered load for hybridlimit and
// redis_rate, built once on emptied nodes and warmed up: at each step
// each system still stepping (not yet limited) runs in turn, the
// generator alone where a judgement needs it, then the step's rows are
// judged and reported.
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
		sys, err := e.newSystem(name, e.s.leaseFraction)
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

// loadStep runs one step of w against sys at rate decisions/s for
// -duration and returns its row, not yet judged. The arrival schedule of
// a rate is the same for every system.
func (e *env) loadStep(ctx context.Context, w workload, name string, sys system, rate int64) (loadRow, error) {
	what := fmt.Sprintf("%s/%s at %d/s", w.name, name, rate)
	e.prog.describe(fmt.Sprintf("%s/%s %d/s", w.name, name, rate))
	m := e.startMeters(ctx, sys)
	var st *stepStats
	labelled(ctx, name, w.name, func(ctx context.Context) { st = offer(ctx, sys, w, e.stepConfig(float64(rate), e.s.duration)) })
	cost := m.since(ctx, e, sys)
	e.prog.add(st.elapsed)
	if ctx.Err() != nil {
		return loadRow{}, interrupted(ctx)
	}
	e.warnErrors(ctx, what, &st.tally)
	r := loadRow{
		Type: "load", setup: newSetup(e, w, name, e.s.leaseFraction),
		OfferedPerSec: float64(rate), Scheduled: st.scheduled, Decisions: st.decisions, Abandoned: st.abandoned,
		Seconds: st.elapsed.Seconds(), AchievedPct: 100 * st.achieved(),
		P50us: quantileUs(st.latency, 50), P99us: quantileUs(st.latency, 99),
		P999us: quantileUs(st.latency, 99.9), MaxUs: float64(st.latency.Max()) / 1e3,
		GeneratorLagP99us: quantileUs(st.lag, 99),
		Admitted:          st.admitted, Errors: st.errors, Sources: st.sourceNames(),
		overflow: st.overflow,
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

// us is d in microseconds.
func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// saturation says why a step did not keep up with its arrivals, or its
// p99 passed saturationP99, or "" if neither.
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

// judge sets what limited a system's step, if anything, and why, and
// whether the generator was behind. alone is the generator's step at the
// same rate against noSystem, nil if not run.
//   - The generator limited the step when alone it could not offer the
//     rate (judgeGenerator): the figures are the generator's.
//   - Else the system did where saturation says why.
//   - Else nothing did; but the generator was behind when its lag in the
//     step, or its lag or p99 alone, was above generatorBound at p99. Its
//     lateness is counted in the latencies, as a server counts the time a
//     request waits for a processor, so a p99 below latencyTarget is the
//     system's all the more, and one above may be the generator's. The
//     reason says so.
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

// judgeGenerator sets whether the generator alone, against noSystem,
// offered its step's load: it is limited where a system would be (see
// saturation), and behind when its lag or its p99 passed generatorBound.
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
