package promlimit

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hybridlimit/hybridlimit/httplimit"
	"github.com/hybridlimit/hybridlimit/hybrid"
)

// TestEveryMetricDocumented: every metric the Collector describes, with
// both middlewares, is named in the package documentation (doc.go) and in
// docs/metrics.md, so that neither list falls behind the code.
func TestEveryMetricDocumented(t *testing.T) {
	m := miniredis.RunT(t)
	lim := newLimiter(t, hybrid.Config{Addrs: []string{m.Addr()}})
	one := []hybrid.Limit{hybrid.PerMinute(1)}
	mw, err := httplimit.New(lim, httplimit.Config{Logger: quiet, Rules: httplimit.RuleSet{Default: &httplimit.Rule{Limits: one}}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(lim, Config{HTTP: mw, GRPC: fakeHTTP{}}) // a GRPCSource too: its metrics are described whatever its counts
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan *prometheus.Desc, 64)
	go func() { c.Describe(ch); close(ch) }()
	fqName := regexp.MustCompile(`fqName: "([a-z_]+)"`)
	var names []string
	for d := range ch {
		sm := fqName.FindStringSubmatch(d.String())
		if sm == nil {
			t.Fatalf("no fqName in %s", d)
		}
		names = append(names, sm[1])
	}
	if len(names) < 20 {
		t.Fatalf("Describe gave %d metrics: %v", len(names), names)
	}
	for _, file := range []string{"doc.go", filepath.Join("..", "docs", "metrics.md")} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		for _, n := range names {
			if !regexp.MustCompile(`\b` + n + `\b`).MatchString(text) {
				t.Errorf("%s does not name the metric %s", file, n)
			}
		}
	}
}
