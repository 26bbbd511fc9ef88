package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// miniredisEnv forces in-process miniredis nodes when set to a true value.
const miniredisEnv = "HYBRIDLIMIT_BENCH_MINIREDIS"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(exitCode(err))
}

// exitCode is run's exit status: 0 for nil, 2 for errUsage, 1 otherwise.
func exitCode(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsage):
		return 2
	}
	return 1
}

// run is the whole program: the report goes to stdout, the charts to
// -out. Before it returns, also when ctx is cancelled (then with the
// results so far and an error wrapping ctx.Err()), it stops the nodes it
// started and deletes its keys on the others; no goroutine it started
// outlives it. A bad command line's error wraps errUsage.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	s, err := parse(args, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return nil
	case err != nil:
		return err
	case s.report != "":
		return runReport(ctx, s, args, stdout, stderr)
	case s.cpuprofile == "":
		return runMode(ctx, s, stdout, stderr, nil)
	}
	f, err := os.Create(s.cpuprofile)
	if err != nil {
		return fmt.Errorf("bench: -cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("bench: -cpuprofile: %w", err)
	}
	err = runMode(ctx, s, stdout, stderr, nil)
	pprof.StopCPUProfile()
	if cerr := f.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("bench: -cpuprofile: %w", cerr)
	}
	return err
}

// labelled runs f and its goroutines under -cpuprofile's labels.
func labelled(ctx context.Context, system, workload string, f func(context.Context)) {
	pprof.Do(ctx, pprof.Labels("system", system, "workload", workload), f)
}

// runMode runs the mode s selects; started, if not nil, is given the
// nodes once they answer.
func runMode(ctx context.Context, s settings, stdout, stderr io.Writer, started func(*cluster)) (err error) {
	if s.mode != modeCompare {
		if err := os.MkdirAll(s.out, 0o755); err != nil {
			return fmt.Errorf("bench: -out: %w", err)
		}
	}
	cl, err := openNodes(ctx, s, forceMiniredis())
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, cl.close(ctx)) }()
	if started != nil {
		started(cl)
	}
	e := &env{s: s, cl: cl, stderr: stderr, log: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if s.mode == modeFault {
		e.log = slog.New(slog.DiscardHandler) // the timeline shows node failures and breaker changes
	}
	if s.json {
		fmt.Fprintln(stderr, cl.describe())
	} else {
		fmt.Fprintf(stdout, "%s\n%s\n\n", cl.describe(), describeRun(s))
	}
	return map[string]func(context.Context, *env, io.Writer) error{
		modeCompare: runCompare, modeSweep: runSweep, modeLoad: runLoad, modeFault: runFault,
	}[s.mode](ctx, e, stdout)
}

// runCompare runs every selected workload on both systems: one table.
func runCompare(ctx context.Context, e *env, stdout io.Writer) (err error) {
	s := e.s
	e.prog = newProgress(e.stderr, s.quiet, time.Duration(len(s.workloads)*len(systemNames))*s.duration)
	rep := newReport(stdout, s.json, false)
	defer func() {
		e.prog.finish()
		err = errors.Join(err, rep.flush())
	}()
	for _, name := range s.workloads {
		w := newWorkload(name, s)
		for _, sys := range systemNames {
			res, err := measureOne(ctx, e, w, sys, s.leaseFraction)
			if err != nil {
				return err
			}
			if err := rep.add(res); err != nil {
				return err
			}
		}
	}
	return nil
}

// measureOne runs measure; an interrupted run is an error, not a figure.
func measureOne(ctx context.Context, e *env, w workload, sys string, fraction float64) (result, error) {
	if ctx.Err() != nil {
		return result{}, fmt.Errorf("bench: interrupted: %w", ctx.Err())
	}
	what := w.name + "/" + sys
	if e.s.mode == modeSweep && sys == sysHybrid {
		what += " lease " + leaseLabel(fraction)
	}
	e.prog.describe(what)
	var res result
	var err error
	labelled(ctx, sys, w.name, func(ctx context.Context) { res, err = measure(ctx, e, w, sys, fraction) })
	switch {
	case err != nil:
		err = fmt.Errorf("bench: %s: %w", what, err)
	case ctx.Err() != nil:
		err = fmt.Errorf("bench: interrupted: %w", ctx.Err())
	}
	return res, err
}

// describeRun is the report's lines of settings and of limits.
func describeRun(s settings) string {
	run := map[string]string{
		modeCompare: fmt.Sprintf("%v per workload and system", s.duration),
		modeSweep:   fmt.Sprintf("-sweep lease, %v per point", s.duration),
		modeFault:   fmt.Sprintf("-fault %s, %v in all, rows of %v", s.fault, s.duration, s.interval),
	}[s.mode]
	callers, leases := "goroutines", ", leases off"
	if s.mode == modeLoad {
		steps := loadStepsUpTo(s.maxLoad)
		run = fmt.Sprintf("-sweep load, Poisson arrivals at %d/s to %d/s until saturation, %v per step", steps[0], steps[len(steps)-1], s.duration)
		callers = "workers"
	}
	if s.mode == modeSweep {
		leases = ""
	} else if s.leaseFraction > 0 {
		leases = ", leases up to " + leaseLabel(s.leaseFraction) + " of the limit"
	}
	var limits []string
	for _, name := range s.limitNames() {
		l := name + " " + formatLimits(s.workloadLimits(name))
		switch n := s.keyCount(name); {
		case name == "zipf" || name == seedWorkload:
			l += fmt.Sprintf(" per key (%d keys, s=%s)", n, strconv.FormatFloat(s.zipfS, 'f', -1, 64))
		case n > 1:
			l += fmt.Sprintf(" per key (%d keys)", n)
		case s.mode == modeFault:
			l += fmt.Sprintf(" per key (%d keys)", len(hotKeys()))
		}
		limits = append(limits, l)
	}
	if s.compact {
		leases += ", the compact layout"
	}
	return fmt.Sprintf("run: %s, %d instances, %d %s, GOMAXPROCS %d, %s%s\nlimits: %s", run, s.instances, s.concurrency, callers,
		runtime.GOMAXPROCS(0), algorithmName(s.algorithm), leases, strings.Join(limits, ", "))
}

// forceMiniredis reports whether miniredisEnv asks for miniredis.
func forceMiniredis() bool {
	v := os.Getenv(miniredisEnv)
	return v != "" && v != "0" && !strings.EqualFold(v, "false")
}
