package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestReport runs -report on miniredis with tiny runs into a directory
// that does not exist yet and checks the report's structure: the
// header's fields, the contents, a section per mode of the standard set
// with the command that reproduces it, the nodes line in a fenced block,
// the mode's tables as Markdown tables, and each chart it links, beside
// it. It asserts no figure. Bounded: 9 sections of runs of 150ms on
// miniredis, the load sweep one step, about 12s under -race on 2 cores;
// the context's deadline of 2 minutes fails it rather than let it hang.
func TestReport(t *testing.T) {
	t.Setenv(miniredisEnv, "1")
	dir := filepath.Join(t.TempDir(), "docs")
	path := filepath.Join(dir, "figures.md")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	args := []string{"-report", path, "-duration", "150ms", "-concurrency", "4", "-instances", "2", "-keys", "10000", "-max-load", "5000", "-q"}
	var stdout, stderr bytes.Buffer
	if err := run(ctx, args, &stdout, &stderr); err != nil {
		t.Fatalf("run(%q) = %v, stderr:\n%s", args, err, stderr.String())
	}
	if strings.Contains(stderr.String(), "bench -report:") {
		t.Errorf("stderr with -q says which section runs:\n%s", stderr.String())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)

	header, body, _ := strings.Cut(md, "\n## ")
	for _, f := range []struct{ field, want string }{
		{"Date", " UTC; the run took "},
		{"Command", "`go run ./bench -report " + path + " "},
		{"Commit", ""},
		{"Machine", " cores (GOMAXPROCS "},
		{"OS", ""},
		{"Load average", " at the start, "},
		{"Go", "go1."},
		{"Redis", "miniredis; each section started its own nodes"},
	} {
		m := regexp.MustCompile(`(?m)^- \*\*` + f.field + `[:*]+ ?(.+)$`).FindStringSubmatch(header)
		if m == nil || !strings.Contains(m[1], f.want) {
			t.Errorf("header has no line - **%s** ... saying %q:\n%s", f.field, f.want, header)
		}
	}

	sections := []struct {
		title, anchor, command, table, chart string
	}{
		{"Comparison", "comparison", "go run ./bench -concurrency 4", "| workload | system | decisions/s |", ""},
		{"The seed's workload, one instance", "the-seeds-workload-one-instance", "go run ./bench -workload seed -concurrency 4", "| workload | system | decisions/s |", ""},
		{"The seed's workload, one instance, the compact layout", "the-seeds-workload-one-instance-the-compact-layout", "go run ./bench -workload seed -layout compact -concurrency 4", "| workload | system | decisions/s |", ""},
		{"Lease sweep", "lease-sweep", "go run ./bench -sweep lease -concurrency 4", "| workload | system | lease |", "lease-sweep.svg"},
		{"Open-loop load sweep", "open-loop-load-sweep", "go run ./bench -sweep load -concurrency 4", "| workload | system | offered/s |", "latency-throughput.svg"},
	}
	for _, k := range faultKinds {
		sections = append(sections, struct{ title, anchor, command, table, chart string }{
			"Fault timeline: " + k, "fault-timeline-" + k, "go run ./bench -fault " + k + " -concurrency 4", "| t | decisions/s |", "fault-timeline-" + k + ".svg"})
	}
	if !strings.Contains(md, "-q -instances 1`") || strings.Contains(md, "-workload seed -concurrency 4 -duration 150ms -instances 2") {
		t.Errorf("the seed's section does not run one instance whatever -instances the report got:\n%s", md)
	}
	got := strings.Split(body, "\n## ")
	if len(got) != len(sections)+1 { // and the contents
		t.Fatalf("%d sections after the header, want the contents and %d:\n%s", len(got), len(sections), md)
	}
	contents := got[0]
	if !strings.Contains(contents, "- No cluster timelines (failover, reshard, scale-out): ") {
		t.Errorf("contents do not say the cluster timelines did not run on miniredis:\n%s", contents)
	}
	charts := []string{filepath.Base(path)}
	for i, want := range sections {
		sec := got[i+1]
		title, text, _ := strings.Cut(sec, "\n")
		if title != want.title {
			t.Errorf("section %d is %q, want %q", i+1, title, want.title)
			continue
		}
		if !strings.Contains(contents, "- ["+want.title+"](#"+want.anchor+"): `"+want.command) {
			t.Errorf("contents lack a link to #%s with its command %q:\n%s", want.anchor, want.command, contents)
		}
		if !strings.Contains(text, "\nAlone: `"+want.command+" ") {
			t.Errorf("%s does not name its command %q:\n%s", title, want.command, text)
		}
		if !strings.Contains(text, "\n```text\nnodes: 3 miniredis on 127.0.0.1:") {
			t.Errorf("%s has no fenced block starting with the nodes line:\n%s", title, text)
		}
		if strings.Contains(text, "wrote ") {
			t.Errorf("%s keeps the mode's wrote line:\n%s", title, text)
		}
		checkTable(t, title, text, want.table)
		links := regexp.MustCompile(`!\[[^]]*\]\(([^)]+)\)`).FindAllStringSubmatch(text, -1)
		switch {
		case want.chart == "" && len(links) > 0:
			t.Errorf("%s links %q, want no chart", title, links)
		case want.chart != "" && (len(links) != 1 || links[0][1] != want.chart):
			t.Errorf("%s links %q, want one chart, %s", title, links, want.chart)
		case want.chart != "":
			charts = append(charts, want.chart)
			svgTexts(t, filepath.Join(dir, want.chart)) // beside the report, an SVG document
		}
	}

	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		files = append(files, e.Name())
	}
	if slices.Sort(files); !slices.Equal(files, slices.Sorted(slices.Values(charts))) {
		t.Errorf("the report's directory holds %q, want the report and its charts %q", files, charts)
	}
	for _, f := range charts {
		if !strings.Contains(stdout.String(), "wrote "+filepath.Join(dir, f)+"\n") {
			t.Errorf("stdout does not say it wrote %s:\n%s", f, stdout.String())
		}
	}
}

// checkTable checks that text holds a Markdown table whose header starts
// with header, followed by its delimiter row and at least one row, every
// row as wide as the header.
func checkTable(t *testing.T, title, text, header string) {
	t.Helper()
	lines := strings.Split(text, "\n")
	i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, header) })
	if i < 0 || i+2 >= len(lines) {
		t.Errorf("%s has no table with the header %q and rows:\n%s", title, header, text)
		return
	}
	cols := strings.Count(lines[i], "|")
	if lines[i+1] != strings.Repeat("|---", cols-1)+"|" {
		t.Errorf("%s: the line after the table's header is %q, want its delimiter row", title, lines[i+1])
	}
	rows := 0
	for _, l := range lines[i+2:] {
		if !strings.HasPrefix(l, "|") {
			break
		}
		rows++
		if n := strings.Count(l, "|"); n != cols {
			t.Errorf("%s: row %q has %d |, want %d as the header", title, l, n, cols)
		}
	}
	if rows == 0 {
		t.Errorf("%s: the table has no rows:\n%s", title, text)
	}
}

// TestReportInterrupted: an interrupted -report returns the interruption
// and leaves the report it would replace as it was, with nothing beside
// it.
func TestReportInterrupted(t *testing.T) {
	t.Setenv(miniredisEnv, "1")
	dir := t.TempDir()
	path := filepath.Join(dir, "figures.md")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	args := []string{"-report", path, "-duration", "150ms", "-q"}
	var stdout, stderr bytes.Buffer
	err := run(ctx, args, &stdout, &stderr)
	if !errors.Is(err, context.Canceled) || exitCode(err) != 1 {
		t.Fatalf("run(%q) cancelled = %v (exit %d), want %v (exit 1)", args, err, exitCode(err), context.Canceled)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "old" {
		t.Errorf("the report is %q (%v) after an interrupted run, want it untouched", b, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the report's directory holds %d files after an interrupted run, want the report alone", len(entries))
	}
}

func TestCommandLine(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{nil, "go run ./bench"},
		{[]string{"-sweep", "lease", "-q"}, "go run ./bench -sweep lease -q"},
		{[]string{"-nodes", "redis://:secret@10.0.0.1:6379,rediss://u:pw@10.0.0.2:6380/2?skip_verify=true"},
			"go run ./bench -nodes 'redis://:xxxxx@10.0.0.1:6379,rediss://u:xxxxx@10.0.0.2:6380/2?skip_verify=true'"},
		{[]string{"-nodes=redis://:secret@h:1"}, "go run ./bench -nodes=redis://:xxxxx@h:1"},
		{[]string{"-report", "my figures.md"}, "go run ./bench -report 'my figures.md'"},
		{[]string{"-report", "it's.md"}, `go run ./bench -report 'it'\''s.md'`},
	}
	for _, tt := range tests {
		if got := commandLine(tt.args); got != tt.want {
			t.Errorf("commandLine(%q) = %q, want %q", tt.args, got, tt.want)
		}
	}
}
