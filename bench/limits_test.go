package main

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hybridlimit/hybridlimit/hybrid"
)

func TestParseLimits(t *testing.T) {
	tests := []struct {
		in      string
		want    []hybrid.Limit
		wantErr string // a part of the error; "" for none
	}{
		{"1000/s", []hybrid.Limit{hybrid.PerSecond(1000)}, ""},
		{"100/m+1000/h", []hybrid.Limit{hybrid.PerMinute(100), hybrid.PerHour(1000)}, ""},
		{" 100/m + 1000/h ", []hybrid.Limit{hybrid.PerMinute(100), hybrid.PerHour(1000)}, ""},
		{"5/s+8/m+1_000/h", []hybrid.Limit{hybrid.PerSecond(5), hybrid.PerMinute(8), hybrid.PerHour(1000)}, ""},
		{"100/m+", nil, "empty limit"},
		{"+100/m", nil, "empty limit"},
		{"100/m++1000/h", nil, "empty limit"},
		{"100/m+ +1000/h", nil, "empty limit"},
		{"+", nil, "empty limit"},
		{"100/m+ten/h", nil, `ten/h: rate "ten"`},
		{"100/m+10/fortnight", nil, `10/fortnight: period "fortnight"`},
		{"ten/h", nil, `rate "ten"`},
		// hybrid's own error for a limit given twice, however it is spelled.
		{"100/m+100/m", nil, "given twice"},
		{"60/m+60/1m", nil, "given twice"},
		{"1000/s+1000/1000ms", nil, "given twice"},
		{strings.Repeat("1/s+", hybrid.MaxLimits) + "1/m", nil, fmt.Sprintf("at most %d", hybrid.MaxLimits)},
	}
	for _, tt := range tests {
		got, err := parseLimits(tt.in)
		switch {
		case tt.wantErr == "" && (err != nil || !slices.Equal(got, tt.want)):
			t.Errorf("parseLimits(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("parseLimits(%q) = %v, %v; want an error saying %q", tt.in, got, err, tt.wantErr)
		case tt.wantErr == "":
			if back, err := parseLimits(formatLimits(got)); err != nil || !slices.Equal(back, got) {
				t.Errorf("parseLimits(formatLimits(%v)) = %v, %v; want it back", got, back, err)
			}
		}
	}
	// A duplicate is refused with the error hybrid gives for it.
	_, err := parseLimits("100/m+100/m")
	if want := hybrid.CheckLimits(1, hybrid.PerMinute(100), hybrid.PerMinute(100)); err == nil || err.Error() != want.Error() {
		t.Errorf("parseLimits(100/m+100/m) = %v, want hybrid's %v", err, want)
	}
	if !errors.Is(err, hybrid.ErrInvalidLimit) {
		t.Errorf("parseLimits(100/m+100/m) = %v, want it to wrap hybrid.ErrInvalidLimit", err)
	}
}

// TestLimitFlag: -limit reaches every workload with -algorithm applied to
// each of its limits, and a bad list is a usage error naming it.
func TestLimitFlag(t *testing.T) {
	s, err := parse([]string{"-limit", "100/m+1000/h", "-algorithm", "fixed-window"}, nil)
	if err != nil {
		t.Fatalf("parse(-limit 100/m+1000/h) = %v", err)
	}
	want := []hybrid.Limit{
		{Algorithm: hybrid.FixedWindow, Rate: 100, Period: time.Minute},
		{Algorithm: hybrid.FixedWindow, Rate: 1000, Period: time.Hour},
	}
	for _, name := range s.workloads {
		if got := s.workloadLimits(name); !slices.Equal(got, want) {
			t.Errorf("%s limits = %v, want %v", name, got, want)
		}
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-limit", "100/m+"}, `-limit "100/m+": empty limit`},
		{[]string{"-limit", "100/m+100/m"}, `-limit "100/m+100/m": limit: invalid limit: TokenBucket(100/1m0s, burst 100) given twice`},
		{[]string{"-limit", "100/s+20000/h", "-algorithm", "sliding-window-log"}, `-limit "100/s+20000/h" with -algorithm sliding-window-log: limit: invalid limit: rate 20000 above 10000`},
	} {
		_, err := parse(tt.args, nil)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("parse(%q) = %v, want a usage error saying %q", tt.args, err, tt.want)
		}
	}
}

func TestLimitsCapacity(t *testing.T) {
	start := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		limits  []hybrid.Limit
		elapsed time.Duration
		want    float64
	}{
		{[]hybrid.Limit{hybrid.PerSecond(5)}, time.Second, 10},
		// In 200 ms the per-second limit binds, in a second the per-minute one.
		{[]hybrid.Limit{hybrid.PerSecond(5), hybrid.PerMinute(8)}, 200 * time.Millisecond, 6},
		{[]hybrid.Limit{hybrid.PerSecond(5), hybrid.PerMinute(8)}, time.Second, 8 + 8.0/60},
		{[]hybrid.Limit{hybrid.PerMinute(8), hybrid.PerSecond(5)}, time.Second, 8 + 8.0/60},
		{[]hybrid.Limit{hybrid.PerMinute(100), hybrid.PerHour(1000)}, 3 * time.Second, 105},
	}
	for _, tt := range tests {
		if got := limitsCapacity(tt.limits, start, tt.elapsed); !near(got, tt.want) {
			t.Errorf("limitsCapacity(%v, %v) = %v, want %v", tt.limits, tt.elapsed, got, tt.want)
		}
	}
	perKey := []uint32{1000, 5}
	limits := []hybrid.Limit{hybrid.PerSecond(5), hybrid.PerMinute(8)}
	if got := ideal(limits, &keyCounts{n: perKey}, start, time.Second); !near(got, 8+8.0/60+5) {
		t.Errorf("ideal(%v, %v, 1s) = %v, want 8.13 + 5", limits, perKey, got)
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// TestSeveralLimitsPerKey hammers 3 keys under -limit 5/s+8/m on
// miniredis: no key is admitted more than its ideal, min(requests, the
// least of its limits' capacities over the run), whether the per-second
// limit binds (200 ms: 6) or the per-minute one (1 s: 8.13, where 5/s
// alone would admit 10). redis_rate asks one Allow per limit up to the
// first denial: more than one call per decision. Answers of hybrid's
// failure mode (a call past the Timeout on a loaded machine) are local
// and approximate by design; they are counted apart.
func TestSeveralLimitsPerKey(t *testing.T) {
	cl := miniCluster(t)
	const goroutines = 4
	e := &env{s: settings{instances: 2, concurrency: goroutines}, cl: cl, log: slog.New(slog.DiscardHandler)}
	limits := []hybrid.Limit{hybrid.PerSecond(5), hybrid.PerMinute(8)}
	keys := keyList("several:", 3)
	for _, d := range []time.Duration{200 * time.Millisecond, time.Second} {
		for _, name := range systemNames {
			t.Run(fmt.Sprintf("%s/%v", name, d), func(t *testing.T) {
				if err := cl.flush(t.Context()); err != nil {
					t.Fatal(err)
				}
				sys, err := e.newSystem(name, 0.01, 1000)
				if err != nil {
					t.Fatal(err)
				}
				defer func() {
					if err := sys.close(); err != nil {
						t.Error(err)
					}
				}()
				var mu sync.Mutex
				var requests, admitted, local [3]int64
				var decisions int64
				calls0 := sys.calls()
				start := time.Now()
				var wg sync.WaitGroup
				for g := range goroutines {
					wg.Go(func() {
						for i := 0; time.Since(start) < d; i++ {
							k := (g + i) % len(keys)
							ok, src, err := sys.allow(t.Context(), g, i, keys[k], limits)
							mu.Lock()
							decisions++
							requests[k]++
							switch {
							case err != nil:
								t.Errorf("allow(%s) = %v", keys[k], err)
							case src >= hybrid.SourceFallback:
								local[k]++
							case ok:
								admitted[k]++
							}
							mu.Unlock()
						}
					})
				}
				wg.Wait()
				elapsed := time.Since(start)
				want := limitsCapacity(limits, start, elapsed)
				for k := range keys {
					if ideal := min(float64(requests[k]), want); float64(admitted[k]) > ideal || admitted[k] == 0 {
						t.Errorf("key %d: admitted %d of %d requests, want 1 to its ideal %.2f", k, admitted[k], requests[k], ideal)
					}
					if local[k] > 0 {
						t.Logf("key %d: %d answers from the failure mode, not counted", k, local[k])
					}
				}
				perDecision := float64(sys.calls()-calls0) / float64(decisions)
				if name == sysRedisRate && perDecision <= 1 {
					t.Errorf("redis_rate made %.3f calls per decision with two limits, want more than 1", perDecision)
				}
				t.Logf("%d decisions, admitted %v (ideal %.2f each), %.3f calls per decision", decisions, admitted, want, perDecision)
			})
		}
	}
}

// TestSeveralLimits runs two limits per key that deny nothing through the
// comparison and the load sweep on miniredis: every JSON row is valid
// against results.go's types and carries both limits joined by '+', and
// redis_rate makes one call per limit, two per decision.
func TestSeveralLimits(t *testing.T) {
	const limits = "1000000/m+10000000/h"
	check := func(system, lim string, decisions, admitted, errs int64, callsPerDecision float64) {
		t.Helper()
		if lim != limits || errs != 0 || decisions > 0 && admitted != decisions {
			t.Errorf("%s: limit %q, %d of %d admitted, %d errors; want %q, all admitted, no errors", system, lim, admitted, decisions, errs, limits)
		}
		if system == sysRedisRate && decisions > 0 && callsPerDecision != 2 {
			t.Errorf("redis_rate: %v calls per decision, want 2 (one per limit)", callsPerDecision)
		}
	}

	out, _ := runBench(t, "-workload", "uniform", "-keys", "1000", "-limit", limits, "-duration", "100ms", "-json")
	rs := results(t, out)
	if len(rs) != len(systemNames) {
		t.Fatalf("%d results, want %d", len(rs), len(systemNames))
	}
	for _, r := range rs {
		check(r.System, r.Limit, r.Decisions, r.Admitted, r.Errors, r.RedisCallsPerDecision)
		if r.Decisions == 0 || r.AdmittedPctOfIdeal < 99.9 || r.AdmittedPctOfIdeal > 100.1 {
			t.Errorf("%s: %d decisions, admitted_pct_of_ideal %v; want some, 100", r.System, r.Decisions, r.AdmittedPctOfIdeal)
		}
	}

	out, _ = runBench(t, "-sweep", "load", "-workload", "uniform", "-keys", "1000", "-limit", limits,
		"-max-load", "10000", "-duration", "100ms", "-json", "-out", t.TempDir())
	rows := decodeLines[loadRow](t, out)
	checkSteps(t, rows, "uniform")
	for _, r := range rows {
		if r.System != sysGenerator {
			check(r.System, r.Limit, r.Decisions, r.Admitted, r.Errors, r.RedisCallsPerDecision)
		}
	}
}
