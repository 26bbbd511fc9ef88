package main

import (
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hybridlimit/hybridlimit/hybrid"
)

// checkSteps checks what every sweep of one workload must show on its two
// steps, 5000/s and 10000/s: each system at 5000/s, at 10000/s only if
// 5000/s did not limit it; the generator alone at 5000/s; the counts of
// every row adding up and its percentiles in order. How fast miniredis
// is, and so where a system stops, is not judged.
func checkSteps(t *testing.T, rows []loadRow, workload string) {
	t.Helper()
	bySystem := map[string][]loadRow{}
	for _, r := range rows {
		if r.Workload != workload {
			continue
		}
		bySystem[r.System] = append(bySystem[r.System], r)
		if r.Type != "load" || r.Nodes != "miniredis" || r.Concurrency != 4 || r.Scheduled <= 0 ||
			r.Scheduled != r.Decisions+r.Abandoned || r.P50us > r.P99us || r.P99us > r.P999us || r.P999us > r.MaxUs {
			t.Errorf("row %+v: want type load on miniredis, 4 workers, scheduled = decisions + abandoned > 0, p50 <= p99 <= p99.9 <= max", r)
		}
		if r.LimitedBy != limitedNone && r.Reason == "" || !slices.Contains([]string{limitedNone, limitedSystem, limitedGenerator}, r.LimitedBy) {
			t.Errorf("row %s/%s at %v/s: limited_by %q, reason %q; want none, or system or generator and a reason",
				r.Workload, r.System, r.OfferedPerSec, r.LimitedBy, r.Reason)
		}
	}
	for _, sys := range systemNames {
		var offered []float64
		for _, r := range bySystem[sys] {
			offered = append(offered, r.OfferedPerSec)
		}
		want := []float64{5000, 10000}
		if rs := bySystem[sys]; len(rs) > 0 && rs[0].LimitedBy != limitedNone {
			want = want[:1]
		}
		if !slices.Equal(offered, want) {
			t.Errorf("%s/%s stepped %v, want %v", workload, sys, offered, want)
		}
	}
	if gen := bySystem[sysGenerator]; len(gen) == 0 || gen[0].OfferedPerSec != 5000 || gen[0].Instances != 0 || len(gen[0].Sources) != 0 {
		t.Errorf("%s generator rows %+v: want one at 5000/s first, with no instances and no sources", workload, gen)
	}
}

// TestLoadSweep runs -sweep load on miniredis for two short steps and
// checks the table, the highest-load lines and the chart.
func TestLoadSweep(t *testing.T) {
	dir := t.TempDir()
	out, _ := runBench(t, "-sweep", "load", "-max-load", "10000", "-duration", "100ms", "-keys", "1000", "-out", dir)
	for _, w := range []string{"run: -sweep load, Poisson arrivals at 5000/s to 10000/s until saturation, 100ms per step", "4 workers",
		"wrote " + filepath.Join(dir, loadChart)} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	lines := strings.Split(out, "\n")
	header := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "workload") })
	if header < 0 {
		t.Fatalf("no table header:\n%s", out)
	}
	for _, col := range []string{"system", "offered/s", "achieved/s", "p50", "p99", "p99.9", "max", "gen lag p99", "cpu/decision client+redis", "limited by"} {
		if !strings.Contains(lines[header], col) {
			t.Errorf("header %q lacks column %q", lines[header], col)
		}
	}
	var rows []string
	for _, l := range lines[header+1:] {
		if l == "" {
			break
		}
		f := strings.Fields(l)
		if len(f) < 13 {
			t.Errorf("row %q has %d fields, want at least 13", l, len(f))
			continue
		}
		rows = append(rows, f[0]+"/"+f[1]+"/"+f[2])
	}
	for _, w := range []string{"zipf", "uniform"} {
		for _, want := range []string{w + "/hybridlimit/5000", w + "/redis_rate/5000", w + "/generator/5000"} {
			if !slices.Contains(rows, want) {
				t.Errorf("no row %s among %q", want, rows)
			}
		}
		line := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "highest load with p99 < 1 ms, "+w+": ") })
		if line < 0 || !strings.Contains(lines[line], "hybridlimit ") || !strings.Contains(lines[line], "redis_rate ") {
			t.Errorf("no line \"highest load with p99 < 1 ms, %s: \" for both systems:\n%s", w, out)
		}
	}
	path := filepath.Join(dir, loadChart)
	wantTexts(t, path, svgTexts(t, path), "zipf: p99 latency against offered load", "uniform: p99 latency against offered load",
		"hybridlimit p99", "redis_rate p99", "the generator alone, p99", "target: p99 < 1 ms")
}

// TestLoadJSON checks -sweep load's JSON rows against results.go's types.
func TestLoadJSON(t *testing.T) {
	dir := t.TempDir()
	out, stderr := runBench(t, "-sweep", "load", "-workload", "uniform", "-max-load", "10000", "-duration", "100ms", "-keys", "1000", "-json", "-out", dir)
	rows := decodeLines[loadRow](t, out)
	checkSteps(t, rows, "uniform")
	for _, r := range rows {
		switch r.System {
		case sysRedisRate:
			if r.Algorithm != "gcra" || r.Instances != 1 || r.Decisions > 0 && r.RedisCallsPerDecision != 1 {
				t.Errorf("redis_rate row %+v: want gcra, 1 instance, 1 call per decision", r)
			}
		case sysHybrid:
			if r.Algorithm != "token-bucket" || r.Instances != 2 || r.LeaseFraction != 0.01 || r.Limit != "1000000/m" {
				t.Errorf("hybridlimit row %+v: want token-bucket, 2 instances, leases 0.01, 1000000/m", r)
			}
		}
	}
	if path := filepath.Join(dir, loadChart); !strings.Contains(stderr, "wrote "+path) {
		t.Errorf("stderr %q does not say it wrote %s", stderr, path)
	}
}

// TestLoadFlags checks -sweep load's defaults and refusals.
func TestLoadFlags(t *testing.T) {
	s, err := parse([]string{"-sweep", "load"}, nil)
	if err != nil {
		t.Fatalf("parse(-sweep load) = %v", err)
	}
	if s.mode != modeLoad || s.duration != loadDuration || s.concurrency != loadWorkers || !slices.Equal(s.workloads, []string{"zipf", "uniform"}) ||
		s.maxLoad != loadSteps[len(loadSteps)-1] {
		t.Errorf("parse(-sweep load) = %+v; want mode load, %v per step, %d workers, zipf and uniform, every step", s, loadDuration, loadWorkers)
	}
	s, err = parse([]string{"-sweep", "load", "-workload", "all", "-concurrency", "8", "-max-load", "30000"}, nil)
	if err != nil || s.concurrency != 8 || len(s.workloads) != 4 || !slices.Equal(loadStepsUpTo(s.maxLoad), []int64{5000, 10000, 20000, 30000}) {
		t.Errorf("parse(-sweep load -workload all -concurrency 8 -max-load 30000) = %+v, %v; want 8 workers, 4 workloads, 4 steps", s, err)
	}
	for _, args := range [][]string{{"-sweep", "load", "-max-load", "4999"}, {"-max-load", "10000"}, {"-sweep", "loads"}} {
		if _, err := parse(args, nil); !errors.Is(err, errUsage) {
			t.Errorf("parse(%q) = %v, want a usage error", args, err)
		}
	}
}

func TestJudge(t *testing.T) {
	clean := loadRow{OfferedPerSec: 5000, Scheduled: 10_000, Decisions: 10_000, AchievedPct: 99.8, P99us: 600, GeneratorLagP99us: 40}
	with := func(f func(r *loadRow)) loadRow { r := clean; f(&r); return r }
	// Rows of the generator alone, judged.
	alone := func(f func(r *loadRow)) *loadRow { r := with(f); r.judgeGenerator(); return &r }
	ok := alone(func(r *loadRow) { r.P99us = 80 })
	lagging := alone(func(r *loadRow) { r.GeneratorLagP99us, r.P99us = 2000, 2500 })
	falling := alone(func(r *loadRow) { r.AchievedPct, r.P99us = 70, 30_000 })
	tests := []struct {
		name   string
		row    loadRow
		alone  *loadRow
		want   string
		behind bool
	}{
		{"kept up", clean, nil, limitedNone, false},
		{"kept up, p99 above the target", with(func(r *loadRow) { r.P99us = 4000 }), ok, limitedNone, false},
		{"the generator alone lags", clean, lagging, limitedNone, true},
		{"the generator alone cannot", clean, falling, limitedGenerator, true},
		{"behind, the generator alone too", with(func(r *loadRow) { r.AchievedPct = 60 }), falling, limitedGenerator, true},
		{"behind, the generator alone lags", with(func(r *loadRow) { r.AchievedPct = 60 }), lagging, limitedSystem, true},
		{"lag in the step", with(func(r *loadRow) { r.GeneratorLagP99us = 900 }), ok, limitedNone, true},
		{"lag in the step, not judged alone yet", with(func(r *loadRow) { r.GeneratorLagP99us = 900 }), nil, limitedNone, true},
		{"queue full", with(func(r *loadRow) { r.overflow = true }), ok, limitedSystem, false},
		{"abandoned", with(func(r *loadRow) { r.Abandoned = 3 }), ok, limitedSystem, false},
		{"achieved 80%", with(func(r *loadRow) { r.AchievedPct = 80 }), ok, limitedSystem, false},
		{"p99 above the bound", with(func(r *loadRow) { r.P99us = us(saturationP99) + 1 }), lagging, limitedSystem, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.row
			r.judge(tt.alone)
			if r.LimitedBy != tt.want || r.behind != tt.behind || (r.LimitedBy == limitedNone && !r.behind) != (r.Reason == "") {
				t.Errorf("judge(%+v) = %q, %q, behind %v; want %q, behind %v, a reason if limited or behind",
					tt.row, r.LimitedBy, r.Reason, r.behind, tt.want, tt.behind)
			}
		})
	}

	gen := []struct {
		name   string
		row    *loadRow
		want   string
		behind bool
	}{
		{"on schedule", ok, limitedNone, false},
		{"p99 above its bound", alone(func(r *loadRow) { r.P99us = us(generatorBound) + 1 }), limitedNone, true},
		{"lag", lagging, limitedNone, true},
		{"p99 above the saturation bound", alone(func(r *loadRow) { r.P99us = us(saturationP99) + 1 }), limitedGenerator, true},
		{"not keeping up", falling, limitedGenerator, true},
	}
	for _, tt := range gen {
		if tt.row.LimitedBy != tt.want || tt.row.behind != tt.behind {
			t.Errorf("judgeGenerator(%s) = %q, behind %v; want %q, behind %v", tt.name, tt.row.LimitedBy, tt.row.behind, tt.want, tt.behind)
		}
	}
}

func TestHighestUnderTarget(t *testing.T) {
	step := func(offered, p99 float64, by string) loadRow {
		r := loadRow{OfferedPerSec: offered, P99us: p99, LimitedBy: by}
		if by != limitedNone {
			r.Reason = "why"
		}
		return r
	}
	behind := func(r loadRow) loadRow { r.behind, r.Reason = true, "behind"; return r }
	tests := []struct {
		name string
		rows []loadRow
		want string
	}{
		{"crosses the target", []loadRow{step(5000, 500, ""), step(10000, 800, ""), step(20000, 1800, ""), step(30000, 900, "system")},
			"10000/s (at 20000/s p99 1.80ms)"},
		{"saturates under the target", []loadRow{step(5000, 500, ""), step(10000, 700, "system")}, "5000/s (at 10000/s system: why)"},
		{"steps ran out", []loadRow{step(5000, 500, ""), step(10000, 700, "")}, "≥ 10000/s (the highest step run)"},
		{"the generator's limit", []loadRow{step(5000, 20, ""), step(10000, 30, "generator")}, "≥ 5000/s (at 10000/s generator: why)"},
		{"the generator behind", []loadRow{behind(step(5000, 600, "")), behind(step(10000, 1300, ""))}, "≥ 5000/s (at 10000/s p99 1.30ms, behind)"},
		{"none", []loadRow{step(5000, 1500, ""), step(10000, 2500, "")}, "none (at 5000/s p99 1.50ms)"},
		{"not measured", []loadRow{step(5000, 4000, "generator")}, "not measured (at 5000/s generator: why)"},
		{"not measured, behind", []loadRow{behind(step(5000, 4000, ""))}, "not measured (at 5000/s p99 4.00ms, behind)"},
	}
	for _, tt := range tests {
		if got := describeHighest(tt.rows); got != tt.want {
			t.Errorf("describeHighest(%s) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestTally: what the closed and the open loop count of each decision, and
// their sum over goroutines.
func TestTally(t *testing.T) {
	errDown := errors.New("down")
	var a, b tally
	a.count(true, hybrid.SourceLease, nil)
	a.count(false, hybrid.SourceRemote, nil)
	a.count(true, hybrid.SourceFailOpen, errDown) // an error: not admitted, no source
	b.count(true, hybrid.SourceRemote, nil)
	b.count(false, hybrid.SourceRemote, errors.New("later"))
	b.abandoned, b.last, a.last = 2, 5*time.Millisecond, 3*time.Millisecond
	a.latency, b.latency = newHist(), newHist()
	record(b.latency, time.Millisecond)
	a.add(&b)
	if a.decisions != 5 || a.admitted != 2 || a.errors != 2 || a.abandoned != 2 || a.last != 5*time.Millisecond || a.firstErr != errDown {
		t.Errorf("sum = %d decisions, %d admitted, %d errors, %d abandoned, last %v, first error %v; want 5, 2, 2, 2, 5ms, %v",
			a.decisions, a.admitted, a.errors, a.abandoned, a.last, a.firstErr, errDown)
	}
	if got, want := a.sourceNames(), map[string]int64{"remote": 2, "lease": 1}; !maps.Equal(got, want) {
		t.Errorf("sourceNames() = %v, want %v", got, want)
	}
	if n := a.latency.TotalCount(); n != 1 {
		t.Errorf("%d latencies after add, want b's 1", n)
	}
}
