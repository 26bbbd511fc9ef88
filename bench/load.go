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

// runLoad runs -sweep load: for each selected workload, hybridlimit and
// redis_rate at each offered load in turn, each until a step saturates it;
// it prints the table and the highest load each sustains with p99 below
// latencyTarget, and writes the chart.
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
	path := filepath.Join(s.out, loadChart)
	return e.writeChart(path, stdout, s.json, loadPlots(s.workloads, rep.rows)...)
}

// warmup is how long a system warms up before its first step.
func warmup(window time.Duration) time.Duration { return min(window, loadWarmup) }

// loadSystem is a system under test in a sweep and whether it still steps.
type loadSystem struct {
	name string
	sys  system
	done bool // saturated, or limited by the generator
}

// sweepLoad steps one workload's offered load for both systems, built
// once on emptied nodes and warmed up: at each step each system still
// stepping runs in turn, the generator alone where a judgement needs it,
// then the step's rows are judged and reported.
func sweepLoad(ctx context.Context, e *env, w workload, steps []int64, rep *loadReport) (err error) {
	s := e.s
	if err := e.cl.flush(ctx); err != nil {
		return err
	}
	var systems []*loadSystem
	defer func() {
		for _, ls := range systems {
			err = errors.Join(err, ls.sys.close())
		}
	}()
	for _, name := range systemNames {
		sys, err := e.newSystem(name, s.leaseFraction)
		if err != nil {
			return err
		}
		systems = append(systems, &loadSystem{name: name, sys: sys})
	}
	for _, ls := range systems {
		e.prog.describe(w.name + "/" + ls.name + " warm-up")
		var st *stepStats
		labelled(ctx, ls.name, w.name, func(ctx context.Context) {
			st = offer(ctx, ls.sys, w, e.stepConfig(float64(steps[0]), warmup(s.duration)))
		})
		e.prog.add(st.window)
		if ctx.Err() != nil {
			return fmt.Errorf("bench: interrupted: %w", ctx.Err())
		}
	}

	for i, rate := range steps {
		var rows []loadRow
		var stepping []*loadSystem
		for _, ls := range systems {
			if ls.done {
				continue
			}
			row, err := e.loadStep(ctx, w, ls.name, ls.sys, rate)
			if err != nil {
				return err
			}
			rows = append(rows, row)
			stepping = append(stepping, ls)
		}
		if len(rows) == 0 {
			return nil
		}
		var alone *loadRow
		needs := i == 0 // the generator's floor, beside the light load
		for _, r := range rows {
			r.judge(nil)
			needs = needs || r.LimitedBy != limitedNone || r.behind || r.P99us >= us(latencyTarget)
		}
		if needs {
			a, err := e.loadStep(ctx, w, sysGenerator, noSystem{}, rate)
			if err != nil {
				return err
			}
			a.judgeGenerator()
			alone = &a
		}
		for j := range rows {
			rows[j].judge(alone)
			if rows[j].LimitedBy != limitedNone {
				stepping[j].done = true
			}
			if err := rep.add(rows[j]); err != nil {
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
	s := e.s
	e.prog.describe(fmt.Sprintf("%s/%s %d/s", w.name, name, rate))
	calls0 := sys.calls()
	redis0, redisOK := e.redisCPU(ctx)
	cpu0 := processCPU()
	var st *stepStats
	labelled(ctx, name, w.name, func(ctx context.Context) { st = offer(ctx, sys, w, e.stepConfig(float64(rate), s.duration)) })
	clientCPU := processCPU() - cpu0
	redis1, redis1OK := e.redisCPU(ctx)
	e.prog.add(st.elapsed)
	if ctx.Err() != nil {
		return loadRow{}, fmt.Errorf("bench: interrupted: %w", ctx.Err())
	}
	if st.errors > 0 {
		fmt.Fprintf(e.stderr, "bench: %s/%s at %d/s: %d of %d decisions failed, first: %v\n", w.name, name, rate, st.errors, st.decisions, st.firstErr)
	}

	r := loadRow{
		Type: "load", setup: newSetup(e, w, name, s.leaseFraction),
		OfferedPerSec: float64(rate), Scheduled: st.scheduled, Decisions: st.decisions, Abandoned: st.abandoned,
		Seconds: st.elapsed.Seconds(), AchievedPct: 100 * st.achieved(),
		P50us: quantileUs(st.latency, 50), P99us: quantileUs(st.latency, 99),
		P999us: quantileUs(st.latency, 99.9), MaxUs: float64(st.latency.Max()) / 1e3,
		GeneratorLagP99us: quantileUs(st.lag, 99),
		Admitted:          st.admitted, Errors: st.errors, Sources: map[string]int64{},
		overflow: st.overflow,
	}
	if st.decisions == 0 {
		return r, nil
	}
	r.DecisionsPerSec = float64(st.decisions) / st.elapsed.Seconds()
	r.RedisCallsPerDecision = float64(sys.calls()-calls0) / float64(st.decisions)
	r.ClientCPUus = float64(clientCPU.Microseconds()) / float64(st.decisions)
	if name == sysGenerator {
		return r, nil // it decides nothing: no sources, and Redis is idle
	}
	for src, n := range st.sources {
		if n > 0 {
			r.Sources[hybrid.Source(src).String()] = n
		}
	}
	if redisOK && redis1OK {
		v := float64((redis1 - redis0).Microseconds()) / float64(st.decisions)
		r.RedisCPUus = &v
	}
	return r, nil
}

// us is d in microseconds.
func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// backlog says why a step did not keep up with its arrivals, or "" if it
// did.
func backlog(r loadRow) string {
	switch {
	case r.overflow:
		return fmt.Sprintf("over %d arrivals waited for a worker", loadQueue)
	case r.Abandoned > 0:
		return fmt.Sprintf("%d arrivals not started within %v of the window's end", r.Abandoned, loadDrain)
	case r.AchievedPct < 100*minAchieved:
		return fmt.Sprintf("calls returned at %.0f%% of the arrival rate", r.AchievedPct)
	}
	return ""
}

// judge sets what limited a system's step, if anything, and why, and
// whether the generator was behind. alone is the generator's step at the
// same rate against noSystem, nil if not run.
//   - The generator limited the step when alone it could not offer the
//     rate (see judgeGenerator): the figures are the generator's.
//   - The system did when its calls did not keep up with the arrivals
//     (see backlog), or its p99 passed saturationP99.
//   - Otherwise nothing did; but the generator was behind when its lag
//     in the step, or its lag or p99 alone, was above generatorBound at
//     p99. Its lateness is counted in the latencies, as a server counts
//     the time a request waits for a processor (at this rate, alone, the
//     generator keeps up), so a p99 below latencyTarget is the system's
//     all the more, and one above may be the generator's. The reason
//     says so.
func (r *loadRow) judge(alone *loadRow) {
	r.LimitedBy, r.Reason = limitedNone, ""
	r.behind = r.GeneratorLagP99us > us(generatorBound) || alone != nil && alone.behind
	switch why := backlog(*r); {
	case alone != nil && alone.LimitedBy != limitedNone:
		r.LimitedBy, r.Reason = limitedGenerator, "the generator alone cannot offer this load: "+alone.Reason
	case why != "":
		r.LimitedBy, r.Reason = limitedSystem, why
	case r.P99us > us(saturationP99):
		r.LimitedBy, r.Reason = limitedSystem, fmt.Sprintf("p99 above %v", saturationP99)
	case r.behind:
		r.Reason = fmt.Sprintf("the generator fell behind: lag p99 %s", latency(r.GeneratorLagP99us))
		if alone != nil {
			r.Reason += fmt.Sprintf(", alone lag p99 %s, p99 %s", latency(alone.GeneratorLagP99us), latency(alone.P99us))
		}
	}
}

// judgeGenerator sets whether the generator alone, against noSystem,
// offered its step's load: it is limited when its calls did not keep up
// with the arrivals (see backlog) or their p99 passed saturationP99, and
// behind when its lag or its p99 passed generatorBound.
func (r *loadRow) judgeGenerator() {
	r.LimitedBy, r.Reason = limitedNone, ""
	r.behind = r.GeneratorLagP99us > us(generatorBound) || r.P99us > us(generatorBound)
	switch why := backlog(*r); {
	case why != "":
		r.LimitedBy, r.Reason = limitedGenerator, why
	case r.P99us > us(saturationP99):
		r.LimitedBy, r.Reason = limitedGenerator, fmt.Sprintf("p99 above %v", saturationP99)
	case r.behind:
		r.Reason = fmt.Sprintf("behind: lag p99 %s, p99 %s", latency(r.GeneratorLagP99us), latency(r.P99us))
	}
}

// highestUnderTarget returns, from one system's steps in offered order,
// the highest offered load up to which every step kept up with p99 below
// latencyTarget (0: not even the first), and the step that ended the run
// of them: nil when the steps ran out first. best is then only a lower
// bound, as it is when stop was limited by the generator, or failed the
// target, not limited, while the generator was behind.
func highestUnderTarget(rows []loadRow) (best float64, stop *loadRow) {
	for i, r := range rows {
		if r.LimitedBy != limitedNone || r.P99us >= us(latencyTarget) {
			return best, &rows[i]
		}
		best = r.OfferedPerSec
	}
	return best, nil
}
