package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
)

// -report runs the standard set, each mode as its own command runs it
// (runMode, in this process, on nodes of its own), and writes what the
// modes print into one Markdown file: their tables as Markdown tables
// (newTable), the rest in fenced blocks, the charts beside the file.

// reportPassed are the flags -report passes to its sections' commands:
// -interval to the fault timelines only, -max-load to the load sweep only,
// the others to every section. Any other flag is a usage error with
// -report (see reportRefused).
var reportPassed = []string{"duration", "interval", "max-load", "instances", "concurrency", "keys",
	"nodes", "cluster", "tls-ca", "tls-cert", "tls-key", "q"}

// reportRefused says why a flag does not go with -report.
func reportRefused(name string) string {
	switch name {
	case "sweep", "fault":
		return "-report runs every mode of the standard set; give -" + name + " without -report for one"
	case "json":
		return "the report is Markdown; a mode alone prints JSON lines"
	case "out":
		return "the charts go beside the report's file"
	case "cpuprofile":
		return "profile one mode, without -report"
	default:
		return "the standard set runs each mode with its defaults; run the mode alone to change what it measures"
	}
}

// reportRows is how many rows a fault timeline of -report has when
// -duration is given without -interval: the default timeline's 12 rows
// of 1s.
const reportRows = 12

// reportSettings finishes parse for -report: only the flags of
// reportPassed may come with it; their values, as "name=value" in the
// order of their names, go to s.reportArgs, and every section's command
// is parsed now, so that a bad one is a usage error before anything runs.
func reportSettings(s settings, fs *flag.FlagSet, set map[string]bool) (settings, error) {
	bad := func(format string, a ...any) (settings, error) {
		return s, fmt.Errorf("%w: "+format, append([]any{errUsage}, a...)...)
	}
	if s.report == "" {
		return bad("-report: empty file name")
	}
	var refused []string
	fs.Visit(func(f *flag.Flag) {
		switch {
		case f.Name == "report":
		case slices.Contains(reportPassed, f.Name):
			s.reportArgs = append(s.reportArgs, f.Name+"="+f.Value.String())
		default:
			refused = append(refused, f.Name)
		}
	})
	if len(refused) > 0 {
		return bad("-%s with -report: %s", refused[0], reportRefused(refused[0]))
	}
	if set["duration"] && !set["interval"] {
		iv := max((s.duration / reportRows).Round(time.Millisecond), minInterval)
		s.reportArgs = append(s.reportArgs, "interval="+iv.String())
	}
	if _, _, err := reportPlan(s.reportArgs); err != nil {
		return s, err
	}
	return s, nil
}

// section is one part of the report: a mode's command and what it printed.
type section struct {
	title string   // the heading, also the anchor other documents link to
	args  []string // the command's flags, as `go run ./bench` takes them
	chart string   // the file the mode writes in -out; "" for none
	name  string   // the chart's name beside the report
	s     settings // args, parsed

	took  time.Duration
	load  string // the load average at the section's start
	parts []part // what the mode printed
}

// command is the section's command line, passwords hidden.
func (sec section) command() string { return commandLine(sec.args) }

// reportPlan lists the sections of a report whose command passed the
// flags passed ("name=value"): the comparison, -sweep lease, -sweep load,
// and the fault timelines that bench can inject on those nodes, each with
// its command parsed. notes say which fault timelines do not run, and why.
func reportPlan(passed []string) (secs []section, notes []string, err error) {
	has := func(name string) bool { return passedFlag(passed, name) }
	// args are the flags of one section: its own, then those passed to it
	// (those of its mode: -interval to the faults, -max-load to the load
	// sweep; -instances to all but the seed's section, which has its own).
	args := func(mode string, own ...string) []string {
		out := slices.Clone(own)
		for _, p := range passed {
			name, v, _ := strings.Cut(p, "=")
			switch {
			case name == "interval" && mode != modeFault, name == "max-load" && mode != modeLoad,
				name == "instances" && slices.Contains(own, seedWorkload):
			case name == "cluster" || name == "q":
				if v == "true" {
					out = append(out, "-"+name)
				}
			default:
				out = append(out, "-"+name, v)
			}
		}
		return out
	}
	fault := func(kind string, own ...string) section {
		name := strings.TrimSuffix(faultChart, ".svg") + "-" + kind + ".svg"
		return section{title: "Fault timeline: " + kind, args: args(modeFault, append([]string{"-fault", kind}, own...)...), chart: faultChart, name: name}
	}
	secs = []section{
		{title: "Comparison", args: args(modeCompare)},
		// docs/capacity.md sizes the seed's service from this one: one
		// instance, whatever -instances the report was given.
		{title: "The seed's workload, one instance", args: append(args(modeCompare, "-workload", seedWorkload), "-instances", "1")},
		{title: "Lease sweep", args: args(modeSweep, "-sweep", "lease"), chart: sweepChart, name: sweepChart},
		{title: "Open-loop load sweep", args: args(modeLoad, "-sweep", "load"), chart: loadChart, name: loadChart},
	}
	switch {
	case has("nodes"):
		notes = append(notes, "No fault timeline: bench injects faults only into nodes it starts, and -nodes names existing ones.")
	case has("cluster"):
		for _, kind := range clusterFaults {
			secs = append(secs, fault(kind))
		}
		notes = append(notes, "Of the fault timelines only the cluster's (failover, reshard, scale-out): on a cluster the others are not built; without -cluster the report runs them on 3 independent nodes.")
	default:
		for _, kind := range faultKinds {
			secs = append(secs, fault(kind))
		}
		_, noCLI := redistest.CLI()
		switch {
		case forceMiniredis() || !redistest.Available():
			notes = append(notes, "No cluster timelines (failover, reshard, scale-out): they need an embedded Redis Cluster of redis-server processes, and the nodes here are miniredis.")
		case noCLI != nil:
			secs = append(secs, fault(faultFailover, "-cluster"))
			notes = append(notes, "No reshard or scale-out timeline: they run redis-cli --cluster, which is not installed (apt-get install redis-tools).")
		default:
			for _, kind := range clusterFaults {
				secs = append(secs, fault(kind, "-cluster"))
			}
		}
	}
	for i := range secs {
		if secs[i].s, err = parse(secs[i].args, io.Discard); err != nil {
			return nil, nil, fmt.Errorf("%w (in -report's %s)", err, secs[i].command())
		}
	}
	return secs, notes, nil
}

// passedFlag reports whether passed ("name=value") sets the flag name to
// something: a value not empty, and not false.
func passedFlag(passed []string, name string) bool {
	return slices.ContainsFunc(passed, func(p string) bool {
		v, ok := strings.CutPrefix(p, name+"=")
		return ok && v != "" && v != "false"
	})
}

// runReport runs the sections of -report in turn and writes the report
// and its charts. Everything goes to a directory beside the report first
// and is moved into place only when every section has run, so that an
// interrupted or failed run leaves an earlier report as it was.
func runReport(ctx context.Context, s settings, args []string, stdout, stderr io.Writer) (err error) {
	secs, notes, err := reportPlan(s.reportArgs)
	if err != nil {
		return err
	}
	dir := filepath.Dir(s.report)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("bench: -report: %w", err)
	}
	if fi, err := os.Stat(s.report); err == nil && fi.IsDir() {
		return fmt.Errorf("bench: -report %s: a directory, want a file name", s.report)
	}
	tmp, err := os.MkdirTemp(dir, ".bench-report-")
	if err != nil {
		return fmt.Errorf("bench: -report: %w", err)
	}
	defer func() { err = errors.Join(err, os.RemoveAll(tmp)) }()

	h := reportHeader{command: commandLine(args), start: time.Now(), loadBefore: loadAverage(),
		machine: readMachine(), commit: sourceCommit(ctx), given: passedFlag(s.reportArgs, "nodes")}
	for i := range secs {
		sec := &secs[i]
		if !s.quiet {
			fmt.Fprintf(stderr, "bench -report: %d of %d: %s\n", i+1, len(secs), sec.command())
		}
		sec.s.out = tmp
		sec.load = loadAverage()
		t0 := time.Now()
		var c capture
		err := runMode(ctx, sec.s, &c, stderr, func(cl *cluster) {
			if !slices.Contains(h.redis, cl.kind) {
				h.redis = append(h.redis, cl.kind)
			}
		})
		if err != nil {
			return fmt.Errorf("%w (-report stopped at %s; nothing written)", err, sec.command())
		}
		sec.took = time.Since(t0)
		sec.parts = c.withoutLine("wrote " + filepath.Join(tmp, sec.chart))
		if sec.chart != "" {
			if err := os.Rename(filepath.Join(tmp, sec.chart), filepath.Join(tmp, sec.name)); err != nil {
				return fmt.Errorf("bench: -report: %w", err)
			}
		}
	}
	h.took, h.loadAfter = time.Since(h.start), loadAverage()

	var b bytes.Buffer
	writeReport(&b, h, secs, notes)
	base := filepath.Base(s.report)
	if err := os.WriteFile(filepath.Join(tmp, base), b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("bench: -report: %w", err)
	}
	var wrote []string
	for _, sec := range secs {
		if sec.name != "" {
			wrote = append(wrote, sec.name)
		}
	}
	wrote = append(wrote, base) // last: a report is in place only with its charts
	for _, f := range wrote {
		if err := os.Rename(filepath.Join(tmp, f), filepath.Join(dir, f)); err != nil {
			return fmt.Errorf("bench: -report: %w", err)
		}
	}
	for _, f := range wrote {
		fmt.Fprintf(stdout, "wrote %s\n", filepath.Join(dir, f))
	}
	return nil
}

// reportHeader is what the report says about its run.
type reportHeader struct {
	command               string
	start                 time.Time
	took                  time.Duration
	loadBefore, loadAfter string
	machine               machine
	commit                string
	redis                 []string // the nodes' kinds, as their sections found them
	given                 bool     // the nodes of -nodes, not started by bench
}

// writeReport writes the report: the header, the contents, the sections.
func writeReport(w io.Writer, h reportHeader, secs []section, notes []string) {
	m := h.machine
	fmt.Fprint(w, `# bench: the standard set

Written by bench's -report, with the command below. Each section is one of
bench's modes, run in this one process as the command the section names
runs it alone, with the tables that command prints and its chart. On a
machine shared with other work the figures move from run to run: compare
the systems within a table, not across reports.

`)
	fmt.Fprintf(w, "- **Date:** %s; the run took %v\n", h.start.UTC().Format("2006-01-02 15:04 MST"), roundTook(h.took))
	fmt.Fprintf(w, "- **Command:** `%s`\n", h.command)
	fmt.Fprintf(w, "- **Commit:** %s\n", h.commit)
	fmt.Fprintf(w, "- **Machine:** %d cores (GOMAXPROCS %d), %s, %s of memory\n", m.cores, m.procs, m.cpu, m.memory)
	fmt.Fprintf(w, "- **OS:** %s\n", m.os)
	fmt.Fprintf(w, "- **Load average** (1, 5, 15 min): %s at the start, %s at the end\n", h.loadBefore, h.loadAfter)
	fmt.Fprintf(w, "- **Go:** %s\n", m.goVersion)
	where := "each section started its own nodes (its first line says where)"
	if h.given {
		where = "the nodes given with -nodes"
	}
	fmt.Fprintf(w, "- **Redis:** %s; %s\n\n", strings.Join(h.redis, ", "), where)

	fmt.Fprintf(w, "## Contents\n\n")
	for _, sec := range secs {
		fmt.Fprintf(w, "- [%s](#%s): `%s`\n", sec.title, anchor(sec.title), sec.command())
	}
	for _, n := range notes {
		fmt.Fprintf(w, "- %s\n", n)
	}
	for _, sec := range secs {
		fmt.Fprintf(w, "\n## %s\n\n", sec.title)
		fmt.Fprintf(w, "Alone: `%s`. Here it took %v; load average %s at its start.\n",
			sec.command(), roundTook(sec.took), sec.load)
		for _, p := range sec.parts {
			if p.table {
				fmt.Fprintf(w, "\n%s", p.text)
				continue
			}
			fmt.Fprintf(w, "\n```text\n%s\n```\n", p.text)
		}
		if sec.name != "" {
			fmt.Fprintf(w, "\n![%s](%s)\n", sec.name, sec.name)
		}
	}
}

// roundTook rounds a run's wall time for the report: to 0.1s below 10s,
// to the second above.
func roundTook(d time.Duration) time.Duration {
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}

// anchor is the fragment GitHub gives a heading: lower case, spaces to
// hyphens, other punctuation dropped.
func anchor(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// commandLine is args as a command a shell runs: "go run ./bench" and
// the flags, quoted where they need it, the passwords of -nodes hidden.
func commandLine(args []string) string {
	parts := []string{"go run ./bench"}
	for i, a := range args {
		switch {
		case i > 0 && (args[i-1] == "-nodes" || args[i-1] == "--nodes"):
			a = redactList(a)
		case strings.HasPrefix(a, "-nodes=") || strings.HasPrefix(a, "--nodes="):
			flagName, v, _ := strings.Cut(a, "=")
			a = flagName + "=" + redactList(v)
		}
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

// redactList hides the passwords of a comma-separated list of URLs.
func redactList(v string) string {
	urls := strings.Split(v, ",")
	for i, u := range urls {
		urls[i] = redactURL(strings.TrimSpace(u))
	}
	return strings.Join(urls, ",")
}

// shellQuote quotes a for a POSIX shell when it holds anything but
// letters, digits and -_./:=@%+,.
func shellQuote(a string) string {
	plain := a != "" && !strings.ContainsFunc(a, func(r rune) bool {
		return !(r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("-_./:=@%+,", r)))
	})
	if plain {
		return a
	}
	return "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
}
