package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
)

// svgTexts checks that the file at path is well-formed XML with an <svg>
// root, and returns the character data of its <text> elements.
func svgTexts(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(b))
	var texts []string
	var root string
	inText := false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s is not well-formed XML: %v", path, err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = el.Name.Local
			}
			inText = el.Name.Local == "text"
			if inText {
				texts = append(texts, "")
			}
		case xml.EndElement:
			inText = false
		case xml.CharData:
			if inText {
				texts[len(texts)-1] += string(el)
			}
		}
	}
	if root != "svg" {
		t.Fatalf("%s: root element %q, want svg", path, root)
	}
	return texts
}

// wantTexts checks that each of want is the text of some <text> element,
// or a prefix of one.
func wantTexts(t *testing.T, path string, texts []string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !slices.ContainsFunc(texts, func(s string) bool { return strings.HasPrefix(s, w) }) {
			t.Errorf("%s: no text %q among %q", path, w, texts)
		}
	}
}

func TestSweep(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "charts", "new") // -out is created
	out, stderr := runBench(t, "-sweep", "lease", "-duration", "100ms", "-keys", "10000", "-json", "-out", dir)
	rs := results(t, out)
	var got []string
	for _, r := range rs {
		got = append(got, r.Workload+"/"+r.System+"/"+leaseLabel(r.LeaseFraction))
		if r.Mode != "sweep" || r.Errors != 0 || r.Decisions <= 0 {
			t.Errorf("result %+v: want mode sweep, decisions, no errors", r)
		}
		if r.System == sysHybrid && r.LeaseFraction == 0 && (r.Sources["lease"] != 0 || r.LeaseUnitsMax != 0) {
			t.Errorf("leases off: %+v, want no lease decisions or units", r)
		}
		if r.LeaseUnitsMax < 0 || r.LeaseBoundPct < 0 || r.LeaseUnitsMean > float64(r.LeaseUnitsMax) {
			t.Errorf("lease units %+v: want max >= mean >= 0", r)
		}
		if r.Workload == "hot" && r.Limit != "1000000/s" {
			t.Errorf("sweep hot limit = %s, want 1000000/s", r.Limit)
		}
	}
	var want []string
	for _, w := range []string{"hot", "zipf"} {
		want = append(want, w+"/redis_rate/off")
		for _, f := range sweepFractions {
			want = append(want, w+"/hybridlimit/"+leaseLabel(f))
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("sweep results = %q, want %q", got, want)
	}
	path := filepath.Join(dir, sweepChart)
	if !strings.Contains(stderr, "wrote "+path) {
		t.Errorf("stderr %q does not say it wrote %s", stderr, path)
	}
	wantTexts(t, path, svgTexts(t, path), "decisions/s against lease size", "admitted/ideal against lease size",
		"hot hybridlimit", "hot redis_rate", "hot bound", "zipf hybridlimit", "zipf redis_rate", "zipf bound",
		"off", "0.1%", "0.25%", "5%")
}

func TestSweepTable(t *testing.T) {
	dir := t.TempDir()
	out, _ := runBench(t, "-sweep", "lease", "-workload", "overlimit", "-duration", "100ms", "-algorithm", "fixed-window", "-out", dir)
	for _, w := range []string{"lease units max", "bound", "overlimit  redis_rate", "fixed-window", "wrote " + filepath.Join(dir, sweepChart)} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if n := strings.Count(out, "overlimit  hybridlimit"); n != len(sweepFractions) {
		t.Errorf("%d hybridlimit rows, want %d:\n%s", n, len(sweepFractions), out)
	}
	svgTexts(t, filepath.Join(dir, sweepChart))
}

// faultRun decodes the JSON of a fault run: its rows and its summary.
func faultRun(t *testing.T, out string) ([]second, faultSummary) {
	t.Helper()
	var rows []second
	var sum faultSummary
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		var typ struct{ Type string }
		if err := json.Unmarshal(sc.Bytes(), &typ); err != nil {
			t.Fatalf("line %s: %v", sc.Bytes(), err)
		}
		switch typ.Type {
		case "second":
			if sum.Type != "" {
				t.Errorf("a second after the fault summary: %s", sc.Bytes())
			}
			var r second
			decodeStrict(t, sc.Bytes(), &r)
			rows = append(rows, r)
		case "fault":
			decodeStrict(t, sc.Bytes(), &sum)
		default:
			t.Errorf("line %s: want type second or fault", sc.Bytes())
		}
		n++
	}
	if sum.Type != "fault" {
		t.Fatalf("no fault summary in:\n%s", out)
	}
	return rows, sum
}

// checkFault checks what every fault run must show: no caller errors,
// one row per interval, the fault among the events, counts that add up.
func checkFault(t *testing.T, fault string, rows []second, sum faultSummary, wantRows int) {
	t.Helper()
	if sum.Errors != 0 {
		t.Errorf("-fault %s: %d errors returned to callers, want 0", fault, sum.Errors)
	}
	if len(rows) != wantRows {
		t.Errorf("-fault %s: %d rows, want %d", fault, len(rows), wantRows)
	}
	var events []string
	var decisions int64
	for _, r := range rows {
		events = append(events, r.Events...)
		decisions += r.Decisions
		if r.Errors != 0 || r.Fault != fault {
			t.Errorf("row %+v: want fault %s, no errors", r, fault)
		}
	}
	if decisions != sum.Decisions || sum.Decisions == 0 {
		t.Errorf("rows sum to %d decisions, summary says %d; want equal and > 0", decisions, sum.Decisions)
	}
	if !slices.ContainsFunc(events, func(e string) bool { return strings.HasPrefix(e, fault+" ") }) {
		t.Errorf("-fault %s: events %q, want the fault among them", fault, events)
	}
	if sum.Fault != fault || sum.Node == "" || sum.FaultAt <= 0 || (fault == "kill") != (sum.BackAt == nil) {
		t.Errorf("summary %+v: want fault %s on a node, at > 0, back_at null only for kill", sum, fault)
	}
}

func TestFaultMiniredis(t *testing.T) {
	for _, fault := range faultKinds {
		t.Run(fault, func(t *testing.T) {
			dir := t.TempDir()
			out, _ := runBench(t, "-fault", fault, "-duration", "600ms", "-interval", "100ms", "-keys", "10000", "-json", "-out", dir)
			rows, sum := faultRun(t, out)
			checkFault(t, fault, rows, sum, 6)
			if sum.Nodes != "miniredis" {
				t.Errorf("nodes = %q, want miniredis", sum.Nodes)
			}
			path := filepath.Join(dir, faultChart)
			wantTexts(t, path, svgTexts(t, path), "decisions/s by Source", "p99 decision latency", "all", "remote", fault+" ")
		})
	}
}

func TestFaultTable(t *testing.T) {
	dir := t.TempDir()
	out, _ := runBench(t, "-fault", "restart", "-duration", "600ms", "-interval", "200ms", "-keys", "10000", "-out", dir)
	for _, w := range []string{"run: -fault restart, 600ms in all, rows of 200ms", "decisions/s", "remote/s", "errors", "p99",
		"degraded", "opened/closed", "victim fm", "victim p99", "others p99", "event", "restart 127.0.0.1:",
		"back (empty) 127.0.0.1:", "errors returned to callers: 0 of ", "answered by the failure mode from the fault to its return",
		"wrote " + filepath.Join(dir, faultChart)} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

// TestFaultKillRedis kills a real redis-server mid-run: hybrid must
// answer the dead node's keys in process and return no error to a caller.
func TestFaultKillRedis(t *testing.T) {
	redisOnly(t)
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	args := []string{"-fault", "kill", "-duration", "1500ms", "-interval", "250ms", "-concurrency", "8", "-instances", "2",
		"-keys", "10000", "-json", "-out", dir}
	if err := run(t.Context(), args, &stdout, &stderr); err != nil {
		t.Fatalf("run(%q) = %v, stderr:\n%s", args, err, stderr.String())
	}
	rows, sum := faultRun(t, stdout.String())
	checkFault(t, "kill", rows, sum, 6)
	if !strings.HasPrefix(sum.Nodes, "redis-server ") {
		t.Errorf("nodes = %q, want redis-server", sum.Nodes)
	}
	if sum.Sources["fallback"] == 0 {
		t.Errorf("sources %v: want the killed node's keys answered by fallback", sum.Sources)
	}
	path := filepath.Join(dir, faultChart)
	wantTexts(t, path, svgTexts(t, path), "fallback", "kill 127.0.0.1:")
	t.Logf("kill on redis-server: %d decisions, sources %v, every breaker open after %v ms", sum.Decisions, sum.Sources, show(sum.DegradedMs))
}

// redisOnly skips the test without redis-server, and fails it in CI, where
// redis-server must be installed; it unsets the miniredis switch.
func redisOnly(t *testing.T) {
	t.Helper()
	if !redistest.Available() {
		if ci := os.Getenv("CI"); ci == "true" || ci == "1" {
			t.Fatal("redis-server not found on PATH; CI must install it (apt-get install redis-server)")
		}
		t.Skip("redis-server not found on PATH")
	}
	t.Setenv(miniredisEnv, "")
}

// runFaultRedis runs a small fault run on redis-server: 8 goroutines, 2
// instances, 10,000 Zipf keys, JSON.
func runFaultRedis(t *testing.T, fault string, duration, interval string) ([]second, faultSummary, string) {
	t.Helper()
	redisOnly(t)
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	args := []string{"-fault", fault, "-duration", duration, "-interval", interval, "-concurrency", "8", "-instances", "2",
		"-keys", "10000", "-json", "-out", dir}
	if err := run(t.Context(), args, &stdout, &stderr); err != nil {
		t.Fatalf("run(%q) = %v, stderr:\n%s", args, err, stderr.String())
	}
	rows, sum := faultRun(t, stdout.String())
	if !strings.HasPrefix(sum.Nodes, "redis-server ") {
		t.Errorf("nodes = %q, want redis-server", sum.Nodes)
	}
	return rows, sum, filepath.Join(dir, faultChart)
}

// faultRows returns the rows that lie wholly between from and to seconds.
func faultRows(rows []second, from, to float64) []second {
	var out []second
	for _, r := range rows {
		if r.T >= from && r.T+r.Interval <= to {
			out = append(out, r)
		}
	}
	return out
}

// TestFaultSlow slows a real redis-server's replies by half the Timeout:
// its keys must stay answered by Redis (slow is not dead), with the
// latency showing in their p99, and no caller sees an error.
func TestFaultSlow(t *testing.T) {
	rows, sum, chart := runFaultRedis(t, "slow", "1500ms", "250ms")
	checkFault(t, "slow", rows, sum, 6)
	want := float64(slowDelay()) / float64(time.Millisecond)
	if sum.SlowMs == nil || *sum.SlowMs != want || sum.BackAt == nil {
		t.Fatalf("slow_ms %v, back_at_s %v: want %v and a time", show(sum.SlowMs), show(sum.BackAt), want)
	}
	var victim, failed, remote int64
	for _, r := range faultRows(rows, sum.FaultAt, *sum.BackAt) {
		victim += r.VictimDecisions
		failed += r.VictimFailed
		remote += r.VictimSources["remote"]
	}
	if victim == 0 || remote == 0 {
		t.Fatalf("while slow: %d decisions for the victim's keys, %d from Redis; want some of each", victim, remote)
	}
	// Mostly remote: a reply within Timeout is an answer. A few calls may
	// still time out on a loaded machine (the 25 ms are half the budget).
	if pct := 100 * float64(failed) / float64(victim); pct > 5 {
		t.Errorf("while slow: %d of %d decisions for the victim's keys (%.1f%%) from the failure mode, want at most 5%%", failed, victim, pct)
	}
	// The delay is there: the victim's answers from Redis take about it.
	if floor := 1000 * want * (1 - slowJitter); sum.FaultVictimP99us < floor {
		t.Errorf("while slow: p99 of the victim's answers from Redis %vµs, want at least %vµs", sum.FaultVictimP99us, floor)
	}
	wantTexts(t, chart, svgTexts(t, chart), "slow 127.0.0.1:", "fast again 127.0.0.1:", "p99 of the victim's Redis answers")
	t.Logf("slow on redis-server: victim's keys %d decisions, %d from the failure mode, p99 from Redis %.0fµs; breaker opened %d times",
		victim, failed, sum.FaultVictimP99us, sum.Opened)
}

// TestFaultFlap takes the path to a real redis-server down and up: the
// failure mode answers its keys during the flaps, none once every breaker
// has closed again, and no caller sees an error.
func TestFaultFlap(t *testing.T) {
	rows, sum, chart := runFaultRedis(t, "flap", "4500ms", "250ms")
	checkFault(t, "flap", rows, sum, 18)
	if sum.Flaps < 3 || sum.BackAt == nil || sum.SlowMs != nil {
		t.Fatalf("flaps %d, back_at_s %v, slow_ms %v: want at least 3 flaps, a time, null", sum.Flaps, show(sum.BackAt), show(sum.SlowMs))
	}
	var during int64
	var downs int
	for _, r := range faultRows(rows, sum.FaultAt, *sum.BackAt+0.25) {
		during += r.VictimFailed
		for _, e := range r.Events {
			if e == "down" {
				downs++
			}
		}
	}
	if during == 0 || sum.Opened == 0 {
		t.Errorf("during the flaps: %d failure-mode answers for the victim's keys, breaker opened %d times; want both > 0", during, sum.Opened)
	}
	if downs+1 != sum.Flaps {
		t.Errorf("%d down events after the first, want flaps-1 = %d", downs, sum.Flaps-1)
	}
	if sum.RecoveredMs == nil {
		t.Fatalf("no recovery within the run: every breaker should close within about OpenTimeout (1s) of the path's return at %.2fs", *sum.BackAt)
	}
	// Once every breaker has closed, the node's keys go to Redis again. A
	// stray timeout on a loaded machine is no effect of the flaps; answers
	// because of a breaker or a broken connection are.
	recovered := *sum.BackAt + *sum.RecoveredMs/1000
	after := faultRows(rows, recovered, math.Inf(1))
	for _, r := range after {
		if n := r.VictimReasons["breaker-open"] + r.VictimReasons["transport"]; n > 0 || r.Opened > 0 {
			t.Errorf("row at %.2fs, after recovery at %.2fs: %v failure-mode answers for the victim's keys, %d openings; want none",
				r.T, recovered, r.VictimReasons, r.Opened)
		}
		if r.VictimFailed > 0 {
			t.Logf("row at %.2fs, after recovery: %d failure-mode answers %v", r.T, r.VictimFailed, r.VictimReasons)
		}
	}
	if len(after) == 0 {
		t.Errorf("no whole row after recovery at %.2fs: the run is too short to show it", recovered)
	}
	wantTexts(t, chart, svgTexts(t, chart), "flap 127.0.0.1:", "steady 127.0.0.1:")
	t.Logf("flap on redis-server: %d flaps, %d failure-mode answers during them, breaker opened %d times, every breaker closed %.0fms after the path came back",
		sum.Flaps, during, sum.Opened, *sum.RecoveredMs)
}

// TestClusterMode: -cluster starts an embedded 3-master, 3-replica Redis
// Cluster, runs both systems on it, every decision by Redis or in process
// from Redis's answers (no failure mode), and stops it (goleak in TestMain;
// the servers are closed). -cluster refuses -fault other than failover.
func TestClusterMode(t *testing.T) {
	redisOnly(t)
	var stdout, stderr bytes.Buffer
	args := []string{"-cluster", "-workload", "all", "-duration", "200ms", "-concurrency", "8", "-instances", "2", "-keys", "1000"}
	if err := run(t.Context(), args, &stdout, &stderr); err != nil {
		t.Fatalf("run(%q) = %v, stderr:\n%s", args, err, stderr.String())
	}
	out := stdout.String()
	if !strings.Contains(out, "nodes: a Redis Cluster (redis-server ") || !strings.Contains(out, "3 masters") {
		t.Errorf("first line does not describe the cluster:\n%s", out)
	}
	for _, row := range []string{"hot        hybridlimit", "hot        redis_rate", "zipf       hybridlimit", "uniform    redis_rate"} {
		if !strings.Contains(out, row) {
			t.Errorf("no %q row:\n%s", row, out)
		}
	}
	// On a healthy cluster no answer should come from the failure mode; a
	// loaded 2-core machine under -race may stall a call past the 50 ms
	// Timeout now and then, which the table shows as "fallback <1%".
	if m := regexp.MustCompile(`fallback [1-9][0-9]*%`).FindString(out); m != "" {
		t.Errorf("answers from the failure mode on a healthy cluster (%s):\n%s", m, out)
	}
	for _, bad := range [][]string{{"-cluster", "-fault", "kill"}, {"-cluster", "-fault", "failover", "-nodes", "redis://127.0.0.1:1"}} {
		if err := run(t.Context(), bad, io.Discard, io.Discard); !errors.Is(err, errUsage) {
			t.Errorf("run(%q) = %v, want a usage error", bad, err)
		}
	}
}
