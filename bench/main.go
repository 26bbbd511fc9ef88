package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
)

// errUsage marks a bad command line: main exits with status 2 for it.
var errUsage = errors.New("bench: usage")

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

// exitCode maps run's error to the exit status: 0 for nil, 2 for a bad
// command line, 1 otherwise.
func exitCode(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsage):
		return 2
	default:
		return 1
	}
}

// settings are the parsed flags.
type settings struct {
	duration    time.Duration
	instances   int
	concurrency int
	workloads   []string
	json        bool
}

// parse reads the command line. Errors wrap errUsage.
func parse(args []string, stderr io.Writer) (settings, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var s settings
	names := workloadNames()
	fs.DurationVar(&s.duration, "duration", 3*time.Second, "how long each workload runs against each system")
	fs.IntVar(&s.instances, "instances", 4, "hybrid.Limiter instances over the same nodes, the load spread over them")
	fs.IntVar(&s.concurrency, "concurrency", 64, "goroutines sending requests, in total")
	workload := fs.String("workload", "all", "workload to run: "+strings.Join(names, ", ")+" or all")
	fs.BoolVar(&s.json, "json", false, "print one JSON object per result instead of a table")
	fs.Bool("q", false, "quiet (accepted; no progress output is printed anyway)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: go run ./bench [flags]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return s, err
		}
		return s, fmt.Errorf("%w: %w", errUsage, err)
	}
	switch {
	case fs.NArg() > 0:
		return s, fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	case s.duration <= 0:
		return s, fmt.Errorf("%w: -duration %v: must be positive", errUsage, s.duration)
	case s.instances < 1:
		return s, fmt.Errorf("%w: -instances %d: must be at least 1", errUsage, s.instances)
	case s.concurrency < 1:
		return s, fmt.Errorf("%w: -concurrency %d: must be at least 1", errUsage, s.concurrency)
	}
	switch {
	case *workload == "all":
		s.workloads = names
	case slices.Contains(names, *workload):
		s.workloads = []string{*workload}
	default:
		return s, fmt.Errorf("%w: -workload %q: want one of %s or all", errUsage, *workload, strings.Join(names, ", "))
	}
	return s, nil
}

// run is the whole program: it parses args, starts the nodes, runs every
// selected workload against every system and writes the report to stdout.
// It stops every node and client it started before returning, also when
// ctx is cancelled (then it reports the results it has and returns
// ctx.Err()). Errors from a bad command line wrap errUsage.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	s, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}

	cl, err := startCluster(ctx, forceMiniredis())
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, cl.close()) }()

	rep := newReport(stdout, s.json)
	if !s.json {
		fmt.Fprintln(stdout, cl.describe())
		fmt.Fprintf(stdout, "run: %v per workload and system, %d instances, %d goroutines, GOMAXPROCS %d\n\n",
			s.duration, s.instances, s.concurrency, runtime.GOMAXPROCS(0))
	} else {
		fmt.Fprintln(stderr, cl.describe())
	}
	defer func() { err = errors.Join(err, rep.flush()) }()

	for _, name := range s.workloads {
		w := newWorkload(name)
		for _, sys := range systemNames {
			if ctx.Err() != nil {
				return fmt.Errorf("bench: interrupted: %w", ctx.Err())
			}
			res, err := measure(ctx, cl, w, sys, s, stderr)
			if err != nil {
				return fmt.Errorf("bench: %s/%s: %w", name, sys, err)
			}
			if ctx.Err() != nil {
				// A run cut short measures the interruption, not the system.
				return fmt.Errorf("bench: interrupted: %w", ctx.Err())
			}
			if err := rep.add(res); err != nil {
				return err
			}
		}
	}
	return nil
}

// forceMiniredis reports whether HYBRIDLIMIT_BENCH_MINIREDIS asks for
// in-process nodes.
func forceMiniredis() bool {
	v := os.Getenv(miniredisEnv)
	return v != "" && v != "0" && !strings.EqualFold(v, "false")
}
