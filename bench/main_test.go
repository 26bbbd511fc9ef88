package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if anything run started outlives it: a
// Limiter's goroutines, a client's connections, a miniredis server.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// tiny are the flags of a run that ends in well under a second per
// workload and system.
var tiny = []string{"-duration", "200ms", "-concurrency", "4", "-instances", "2"}

// runBench runs bench on miniredis with tiny settings plus args and
// returns stdout.
func runBench(t *testing.T, args ...string) string {
	t.Helper()
	t.Setenv(miniredisEnv, "1")
	var stdout, stderr bytes.Buffer
	if err := run(t.Context(), append(slices.Clone(tiny), args...), &stdout, &stderr); err != nil {
		t.Fatalf("run(%q) = %v, stderr:\n%s", args, err, stderr.String())
	}
	return stdout.String()
}

func TestTable(t *testing.T) {
	out := runBench(t)
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if !strings.HasPrefix(lines[0], "nodes: 3 miniredis on 127.0.0.1:") {
		t.Errorf("first line = %q, want it to say nodes: 3 miniredis on 127.0.0.1:...", lines[0])
	}
	header := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "workload") })
	if header < 0 {
		t.Fatalf("no table header in output:\n%s", out)
	}
	for _, col := range []string{"system", "decisions/s", "p50", "p99", "redis calls/decision", "admitted/ideal", "sources"} {
		if !strings.Contains(lines[header], col) {
			t.Errorf("header %q lacks column %q", lines[header], col)
		}
	}
	rows := lines[header+1:]
	var got []string
	for _, r := range rows {
		f := strings.Fields(r)
		if len(f) < 8 {
			t.Errorf("row %q has %d fields, want at least 8", r, len(f))
			continue
		}
		got = append(got, f[0]+"/"+f[1])
	}
	var want []string
	for _, w := range workloadNames() {
		for _, s := range systemNames {
			want = append(want, w+"/"+s)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("rows = %q, want %q", got, want)
	}
}

func TestJSON(t *testing.T) {
	out := runBench(t, "-json")
	sc := bufio.NewScanner(strings.NewReader(out))
	var got []string
	for sc.Scan() {
		// Every documented field must be present, with its JSON type.
		var raw map[string]any
		if err := json.Unmarshal(sc.Bytes(), &raw); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		for field, kind := range map[string]string{
			"workload": "string", "system": "string", "nodes": "string",
			"decisions": "number", "seconds": "number", "decisions_per_sec": "number",
			"p50_us": "number", "p99_us": "number", "redis_calls_per_decision": "number",
			"admitted": "number", "ideal": "number", "admitted_pct_of_ideal": "number",
			"sources": "object", "errors": "number",
		} {
			var ok bool
			switch v := raw[field]; kind {
			case "string":
				_, ok = v.(string)
			case "number":
				_, ok = v.(float64)
			case "object":
				_, ok = v.(map[string]any)
			}
			if !ok {
				t.Errorf("line %q: field %q = %v, want a %s", sc.Text(), field, raw[field], kind)
			}
		}
		var r result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if r.Nodes != "miniredis" || r.Decisions <= 0 || r.DecisionsPerSec <= 0 || r.P99us < r.P50us || r.Errors != 0 {
			t.Errorf("result %+v: want nodes miniredis, decisions > 0, p99 >= p50, no errors", r)
		}
		if r.System == "redis_rate" && (r.RedisCallsPerDecision != 1 || r.Sources["remote"] != r.Decisions) {
			t.Errorf("redis_rate result %+v: want 1 call per decision, all remote", r)
		}
		// Admitted against ideal is a figure this test reads, not judges,
		// for hybridlimit: on a starved machine its Fallback mode can admit
		// a key over its limit again per instance (a known defect, issue 4);
		// TestLeaseAccuracy in package hybrid holds the accuracy. redis_rate,
		// exact per request, must stay at or below the ideal.
		if r.AdmittedPctOfIdeal <= 0 || (r.System == "redis_rate" && r.AdmittedPctOfIdeal > 101) {
			t.Errorf("%s/%s admitted_pct_of_ideal = %v, want above 0 (at most 101 for redis_rate)", r.Workload, r.System, r.AdmittedPctOfIdeal)
		}
		got = append(got, r.Workload+"/"+r.System)
	}
	if len(got) != len(workloadNames())*len(systemNames) {
		t.Errorf("JSON results = %q, want one per workload and system", got)
	}
}

func TestOneWorkload(t *testing.T) {
	out := runBench(t, "-workload", "hot", "-q", "-json")
	var got []string
	for line := range strings.Lines(out) {
		var r result
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		got = append(got, r.Workload+"/"+r.System)
	}
	if want := []string{"hot/hybridlimit", "hot/redis_rate"}; !slices.Equal(got, want) {
		t.Errorf("-workload hot results = %q, want %q", got, want)
	}
}

func TestBadFlags(t *testing.T) {
	tests := [][]string{
		{"-duration", "-1s"},
		{"-duration", "0"},
		{"-duration", "soon"},
		{"-workload", "nope"},
		{"-instances", "0"},
		{"-concurrency", "-3"},
		{"-nosuchflag"},
		{"extra"},
	}
	for _, args := range tests {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(t.Context(), args, &stdout, &stderr)
			if !errors.Is(err, errUsage) || exitCode(err) != 2 {
				t.Fatalf("run(%q) = %v (exit %d), want an error wrapping errUsage (exit 2)", args, err, exitCode(err))
			}
			if msg := err.Error(); strings.Contains(msg, "\n") {
				t.Errorf("run(%q) error %q, want one line", args, msg)
			}
			if stdout.Len() > 0 {
				t.Errorf("run(%q) wrote %q to stdout, want nothing", args, stdout.String())
			}
		})
	}
}

func TestHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run(t.Context(), []string{"-h"}, &stdout, &stderr); err != nil {
		t.Fatalf("run(-h) = %v, want nil", err)
	}
	if !strings.Contains(stderr.String(), "-duration") {
		t.Errorf("run(-h) stderr = %q, want the flags listed", stderr.String())
	}
}

func TestCancelled(t *testing.T) {
	t.Setenv(miniredisEnv, "1")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var stdout, stderr bytes.Buffer
	err := run(ctx, tiny, &stdout, &stderr)
	if !errors.Is(err, context.Canceled) || exitCode(err) != 1 {
		t.Fatalf("run(cancelled ctx) = %v (exit %d), want %v (exit 1)", err, exitCode(err), context.Canceled)
	}
}
