package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hybridlimit/hybridlimit/internal/redistest"
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
func faultRun(t *testing.T, out string) ([]jsonSecond, jsonFault) {
	t.Helper()
	var rows []jsonSecond
	var sum jsonFault
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
			var r jsonSecond
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
func checkFault(t *testing.T, fault string, rows []jsonSecond, sum jsonFault, wantRows int) {
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
		"degraded", "event", "restart 127.0.0.1:", "back (empty) 127.0.0.1:", "errors returned to callers: 0 of ",
		"wrote " + filepath.Join(dir, faultChart)} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

// TestFaultKillRedis kills a real redis-server mid-run: hybrid must
// answer the dead node's keys in process and return no error to a caller.
func TestFaultKillRedis(t *testing.T) {
	if !redistest.Available() {
		if ci := os.Getenv("CI"); ci == "true" || ci == "1" {
			t.Fatal("redis-server not found on PATH; CI must install it (apt-get install redis-server)")
		}
		t.Skip("redis-server not found on PATH")
	}
	t.Setenv(miniredisEnv, "")
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
