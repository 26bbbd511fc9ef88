package main

import (
	"bytes"
	"cmp"
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

// reportPassed are the flags -report passes on to its sections (doc.go);
// any other is a usage error, for the reason in reportRefused.
var reportPassed = []string{"duration", "interval", "max-load", "instances", "concurrency", "keys", "layout-keys",
	"nodes", "cluster", "tls-ca", "tls-cert", "tls-key", "q"}

// reportRefused says why a flag does not go with -report; "" for the others.
var reportRefused = map[string]string{
	"sweep":      "-report runs every mode of the standard set; give -sweep without -report for one",
	"fault":      "-report runs every mode of the standard set; give -fault without -report for one",
	"json":       "the report is Markdown; a mode alone prints JSON lines",
	"out":        "the charts go beside the report's file",
	"cpuprofile": "profile one mode, without -report",
	"":           "the standard set runs each mode with its defaults; run the mode alone to change what it measures",
}

// reportRows is a fault timeline's rows under -report when -duration comes
// without -interval, as in the default timeline.
const reportRows = 12

// reportSettings finishes parse for -report: it puts the flags passed in
// s.reportArgs ("name=value") and parses every section's command now, so
// that a bad one is a usage error before anything runs.
func reportSettings(s settings, fs *flag.FlagSet, set map[string]bool) (settings, error) {
	if s.report == "" {
		return s, fmt.Errorf("%w: -report: empty file name", errUsage)
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
		return s, fmt.Errorf("%w: -%s with -report: %s", errUsage, refused[0], cmp.Or(reportRefused[refused[0]], reportRefused[""]))
	}
	if set["duration"] && !set["interval"] {
		iv := max((s.duration / reportRows).Round(time.Millisecond), minInterval)
		s.reportArgs = append(s.reportArgs, "interval="+iv.String())
	}
	_, _, err := reportPlan(s.reportArgs)
	return s, err
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

// reportPlan lists the report's sections for the flags passed, each
// command parsed; notes say which fault timelines do not run, and why.
func reportPlan(passed []string) (secs []section, notes []string, err error) {
	// args are a section's own flags, then those passed that go to it.
	args := func(mode string, own ...string) []string {
		out := slices.Clone(own)
		for _, p := range passed {
			name, v, _ := strings.Cut(p, "=")
			switch {
			case name == "interval" && mode != modeFault, name == "max-load" && mode != modeLoad,
				name == "instances" && slices.Contains(own, seedWorkload),
				name == "layout-keys" && !slices.Contains(own, layoutCompact):
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
	faults := func(kinds []string, own ...string) {
		for _, kind := range kinds {
			name := strings.TrimSuffix(faultChart, ".svg") + "-" + kind + ".svg"
			secs = append(secs, section{title: "Fault timeline: " + kind, args: args(modeFault, append([]string{"-fault", kind}, own...)...), chart: faultChart, name: name})
		}
	}
	secs = []section{
		{title: "Comparison", args: args(modeCompare)},
		// One instance whatever -instances: docs/capacity.md sizes from it.
		{title: "The seed's workload, one instance", args: append(args(modeCompare, "-workload", seedWorkload), "-instances", "1")},
		{title: "The seed's workload, one instance, the compact layout", args: append(args(modeCompare, "-workload", seedWorkload, "-layout", layoutCompact), "-instances", "1")},
		{title: "Lease sweep", args: args(modeSweep, "-sweep", "lease"), chart: sweepChart, name: sweepChart},
		{title: "Open-loop load sweep", args: args(modeLoad, "-sweep", "load"), chart: loadChart, name: loadChart},
	}
	switch {
	case passedFlag(passed, "nodes"):
		notes = append(notes, "No fault timeline: bench injects faults only into nodes it starts, and -nodes names existing ones.")
	case passedFlag(passed, "cluster"):
		faults(clusterFaults)
		notes = append(notes, "Of the fault timelines only the cluster's (failover, reshard, scale-out): on a cluster the others are not built; without -cluster the report runs them on 3 independent nodes.")
	default:
		faults(faultKinds)
		_, noCLI := redistest.CLI()
		switch {
		case forceMiniredis() || !redistest.Available():
			notes = append(notes, "No cluster timelines (failover, reshard, scale-out): they need an embedded Redis Cluster of redis-server processes, and the nodes here are miniredis.")
		case noCLI != nil:
			faults([]string{faultFailover}, "-cluster")
			notes = append(notes, "No reshard or scale-out timeline: they run redis-cli --cluster, which is not installed (apt-get install redis-tools).")
		default:
			faults(clusterFaults, "-cluster")
		}
	}
	for i := range secs {
		if secs[i].s, err = parse(secs[i].args, io.Discard); err != nil {
			return nil, nil, fmt.Errorf("%w (in -report's %s)", err, secs[i].command())
		}
	}
	return secs, notes, nil
}

// passedFlag reports whether passed sets name to neither "" nor false.
func passedFlag(passed []string, name string) bool {
	return slices.ContainsFunc(passed, func(p string) bool {
		v, ok := strings.CutPrefix(p, name+"=")
		return ok && v != "" && v != "false"
	})
}

// runReport runs the sections and writes the report and its charts, moved
// into place only once every section has run.
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

	var wrote []string // the charts, then the report: in place only with its charts
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
			wrote = append(wrote, sec.name)
		}
	}
	h.took, h.loadAfter = time.Since(h.start), loadAverage()

	var b bytes.Buffer
	writeReport(&b, h, secs, notes)
	base := filepath.Base(s.report)
	if err := os.WriteFile(filepath.Join(tmp, base), b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("bench: -report: %w", err)
	}
	wrote = append(wrote, base)
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
	where := "each section started its own nodes (its first line says where)"
	if h.given {
		where = "the nodes given with -nodes"
	}
	fmt.Fprintf(w, "- **Date:** %s; the run took %v\n- **Command:** `%s`\n- **Commit:** %s\n"+
		"- **Machine:** %d cores (GOMAXPROCS %d), %s, %s of memory\n- **OS:** %s\n"+
		"- **Load average** (1, 5, 15 min): %s at the start, %s at the end\n- **Go:** %s\n- **Redis:** %s; %s\n\n## Contents\n\n",
		h.start.UTC().Format("2006-01-02 15:04 MST"), roundTook(h.took), h.command, h.commit, m.cores, m.procs, m.cpu, m.memory,
		m.os, h.loadBefore, h.loadAfter, m.goVersion, strings.Join(h.redis, ", "), where)
	for _, sec := range secs {
		fmt.Fprintf(w, "- [%s](#%s): `%s`\n", sec.title, anchor(sec.title), sec.command())
	}
	for _, n := range notes {
		fmt.Fprintf(w, "- %s\n", n)
	}
	for _, sec := range secs {
		fmt.Fprintf(w, "\n## %s\n\nAlone: `%s`. Here it took %v; load average %s at its start.\n",
			sec.title, sec.command(), roundTook(sec.took), sec.load)
		for _, p := range sec.parts {
			if p.table {
				fmt.Fprintf(w, "\n%s", p.text)
			} else {
				fmt.Fprintf(w, "\n```text\n%s\n```\n", p.text)
			}
		}
		if sec.name != "" {
			fmt.Fprintf(w, "\n![%s](%s)\n", sec.name, sec.name)
		}
	}
}

// roundTook rounds to 0.1s below 10s, to the second above.
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

// commandLine is "go run ./bench" and args, shell-quoted, -nodes' passwords hidden.
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

// shellQuote quotes a for a POSIX shell unless it is all ASCII letters, digits and -_./:=@%+,.
func shellQuote(a string) string {
	if a != "" && !strings.ContainsFunc(a, func(r rune) bool {
		return !(r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("-_./:=@%+,", r)))
	}) {
		return a
	}
	return "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
}
