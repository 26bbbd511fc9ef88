package promlimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hybridlimit/hybridlimit/httplimit"
	"github.com/hybridlimit/hybridlimit/hybrid"
)

var quiet = slog.New(slog.DiscardHandler)

func newLimiter(t *testing.T, cfg hybrid.Config) *hybrid.Limiter {
	t.Helper()
	if cfg.Timeout == 0 {
		cfg.Timeout = 2 * time.Second
	}
	cfg.Logger = quiet
	lim, err := hybrid.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lim.Close() })
	return lim
}

func TestNewErrors(t *testing.T) {
	m := miniredis.RunT(t)
	lim := newLimiter(t, hybrid.Config{Addrs: []string{m.Addr()}})
	tests := []struct {
		name string
		lim  *hybrid.Limiter
		cfg  Config
	}{
		{"nil limiter", nil, Config{}},
		{"namespace with a dash", lim, Config{Namespace: "rate-limit"}},
		{"namespace starting with a digit", lim, Config{Namespace: "1rl"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.lim, tt.cfg); !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("New = %v, want ErrInvalidConfig", err)
			}
		})
	}
}

func TestLimiterMetrics(t *testing.T) {
	m := miniredis.RunT(t)
	lim := newLimiter(t, hybrid.Config{Addrs: []string{m.Addr()}, Lease: hybrid.LeaseConfig{Disable: true}})
	ctx := context.Background()
	for range 5 {
		if _, err := lim.Allow(ctx, "k", hybrid.PerMinute(3)); err != nil {
			t.Fatal(err)
		}
	}
	c, err := New(lim, Config{})
	if err != nil {
		t.Fatal(err)
	}
	// 3 allowed by Redis, 1 denied by Redis, 1 denied from the denial cache.
	want := `
# HELP hybridlimit_decisions_total Requests answered by the limiter, by what decided (source) and outcome.
# TYPE hybridlimit_decisions_total counter
hybridlimit_decisions_total{outcome="allowed",source="deny-cache"} 0
hybridlimit_decisions_total{outcome="allowed",source="fail-closed"} 0
hybridlimit_decisions_total{outcome="allowed",source="fail-open"} 0
hybridlimit_decisions_total{outcome="allowed",source="fallback"} 0
hybridlimit_decisions_total{outcome="allowed",source="lease"} 0
hybridlimit_decisions_total{outcome="allowed",source="remote"} 3
hybridlimit_decisions_total{outcome="denied",source="deny-cache"} 1
hybridlimit_decisions_total{outcome="denied",source="fail-closed"} 0
hybridlimit_decisions_total{outcome="denied",source="fail-open"} 0
hybridlimit_decisions_total{outcome="denied",source="fallback"} 0
hybridlimit_decisions_total{outcome="denied",source="lease"} 0
hybridlimit_decisions_total{outcome="denied",source="remote"} 1
# HELP hybridlimit_deny_cache_keys Keys the denial cache holds.
# TYPE hybridlimit_deny_cache_keys gauge
hybridlimit_deny_cache_keys 1
# HELP hybridlimit_lease_units Units held in leases: the most the limits may be exceeded by at this moment, and the units other instances cannot have meanwhile.
# TYPE hybridlimit_lease_units gauge
hybridlimit_lease_units 0
# HELP hybridlimit_lease_units_lost_total Units leased that were, for certain, neither spent nor given back (a give-back not sent, or whose node left the ring).
# TYPE hybridlimit_lease_units_lost_total counter
hybridlimit_lease_units_lost_total 0
# HELP hybridlimit_lease_units_unknown_total Units of lease batches and give-backs that were sent and got no answer in time: they may or may not have run on Redis.
# TYPE hybridlimit_lease_units_unknown_total counter
hybridlimit_lease_units_unknown_total 0
# HELP hybridlimit_node_breaker_state State of a node's circuit breaker: 1 for the current state.
# TYPE hybridlimit_node_breaker_state gauge
hybridlimit_node_breaker_state{node="%[1]s",state="closed"} 1
hybridlimit_node_breaker_state{node="%[1]s",state="half-open"} 0
hybridlimit_node_breaker_state{node="%[1]s",state="open"} 0
# HELP hybridlimit_node_degraded 1 while a node's keys are answered by the failure mode (fallback active).
# TYPE hybridlimit_node_degraded gauge
hybridlimit_node_degraded{node="%[1]s"} 0
# HELP hybridlimit_node_errors_total Round trips to a Redis node that failed, timeouts included.
# TYPE hybridlimit_node_errors_total counter
hybridlimit_node_errors_total{node="%[1]s"} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(fmt.Sprintf(want, m.Addr())),
		"hybridlimit_decisions_total", "hybridlimit_deny_cache_keys", "hybridlimit_lease_units", "hybridlimit_lease_units_lost_total", "hybridlimit_lease_units_unknown_total",
		"hybridlimit_node_breaker_state", "hybridlimit_node_degraded", "hybridlimit_node_errors_total"); err != nil {
		t.Error(err)
	}
	// The latency histogram holds every round trip.
	calls := lim.Stats().Nodes[0].Calls
	reg := prometheus.NewPedanticRegistry() // also checks Describe against Collect
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "hybridlimit_node_latency_seconds" {
			continue
		}
		h := mf.GetMetric()[0].GetHistogram()
		if h.GetSampleCount() != uint64(calls) || calls < 4 {
			t.Errorf("latency count = %d, want the %d calls", h.GetSampleCount(), calls)
		}
		last := uint64(0)
		for _, b := range h.GetBucket() {
			if b.GetCumulativeCount() < last {
				t.Errorf("bucket %v: %d after %d, want cumulative counts", b.GetUpperBound(), b.GetCumulativeCount(), last)
			}
			last = b.GetCumulativeCount()
		}
		if len(h.GetBucket()) != 12 || h.GetSampleSum() <= 0 {
			t.Errorf("latency = %v, want 12 buckets and a positive sum", h)
		}
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) != 0 {
		t.Errorf("lint: %v, %v", problems, err)
	}
}

func TestHistogram(t *testing.T) {
	l := hybrid.Latency{
		Bounds: []time.Duration{time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond},
		Counts: []int64{2, 0, 3, 1},
		Count:  6,
		Sum:    250 * time.Millisecond,
	}
	count, sum, buckets := histogram(l)
	want := map[float64]uint64{0.001: 2, 0.01: 2, 0.1: 5}
	if count != 6 || sum != 0.25 || fmt.Sprint(buckets) != fmt.Sprint(want) {
		t.Errorf("histogram = %d, %v, %v; want 6, 0.25, %v", count, sum, buckets, want)
	}
	if count, _, buckets := histogram(hybrid.Latency{}); count != 0 || len(buckets) != 0 {
		t.Errorf("histogram(empty) = %d, %v", count, buckets)
	}
}

func TestDegradedNode(t *testing.T) {
	// Nothing listens on port 1 of loopback: every call fails, and the
	// breaker opens after the first.
	lim := newLimiter(t, hybrid.Config{Addrs: []string{"127.0.0.1:1"}, Timeout: 200 * time.Millisecond,
		Breaker: hybrid.BreakerConfig{ConsecutiveFailures: 1, OpenTimeout: time.Minute}})
	for range 3 {
		if _, err := lim.Allow(context.Background(), "k", hybrid.PerMinute(10)); err != nil {
			t.Fatal(err)
		}
	}
	c, err := New(lim, Config{Namespace: "rl", ConstLabels: prometheus.Labels{"app": "test"}})
	if err != nil {
		t.Fatal(err)
	}
	want := `
# HELP rl_node_breaker_opened_total Times a node's circuit breaker opened.
# TYPE rl_node_breaker_opened_total counter
rl_node_breaker_opened_total{app="test",node="127.0.0.1:1"} 1
# HELP rl_node_breaker_state State of a node's circuit breaker: 1 for the current state.
# TYPE rl_node_breaker_state gauge
rl_node_breaker_state{app="test",node="127.0.0.1:1",state="closed"} 0
rl_node_breaker_state{app="test",node="127.0.0.1:1",state="half-open"} 0
rl_node_breaker_state{app="test",node="127.0.0.1:1",state="open"} 1
# HELP rl_node_degraded 1 while a node's keys are answered by the failure mode (fallback active).
# TYPE rl_node_degraded gauge
rl_node_degraded{app="test",node="127.0.0.1:1"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "rl_node_breaker_opened_total", "rl_node_breaker_state", "rl_node_degraded"); err != nil {
		t.Error(err)
	}
	if st := lim.Stats(); st.Decisions[hybrid.SourceFallback] != 3 {
		t.Fatalf("Stats().Decisions = %v, want 3 from the fallback", st.Decisions)
	}
	// The first call was refused by the node, the two after it by the open
	// breaker.
	want = `
# HELP rl_node_undecided_total Answers for a node's keys given by the failure mode, by why Redis did not decide them.
# TYPE rl_node_undecided_total counter
rl_node_undecided_total{app="test",node="127.0.0.1:1",reason="breaker-open"} 2
rl_node_undecided_total{app="test",node="127.0.0.1:1",reason="config"} 0
rl_node_undecided_total{app="test",node="127.0.0.1:1",reason="cancelled"} 0
rl_node_undecided_total{app="test",node="127.0.0.1:1",reason="cluster"} 0
rl_node_undecided_total{app="test",node="127.0.0.1:1",reason="queue-full"} 0
rl_node_undecided_total{app="test",node="127.0.0.1:1",reason="queued"} 0
rl_node_undecided_total{app="test",node="127.0.0.1:1",reason="server"} 0
rl_node_undecided_total{app="test",node="127.0.0.1:1",reason="timeout"} 0
rl_node_undecided_total{app="test",node="127.0.0.1:1",reason="transport"} 1
# HELP rl_undecided_no_node_total Answers given by the failure mode because the ring had no node.
# TYPE rl_undecided_no_node_total counter
rl_undecided_no_node_total{app="test"} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "rl_node_undecided_total", "rl_undecided_no_node_total"); err != nil {
		t.Error(err)
	}
	var b strings.Builder
	b.WriteString("# HELP rl_decisions_total Requests answered by the limiter, by what decided (source) and outcome.\n# TYPE rl_decisions_total counter\n")
	for _, outcome := range []string{"allowed", "denied"} {
		for _, src := range []string{"deny-cache", "fail-closed", "fail-open", "fallback", "lease", "remote"} {
			n := 0
			if src == "fallback" && outcome == "allowed" {
				n = 3
			}
			fmt.Fprintf(&b, "rl_decisions_total{app=\"test\",outcome=%q,source=%q} %d\n", outcome, src, n)
		}
	}
	if err := testutil.CollectAndCompare(c, strings.NewReader(b.String()), "rl_decisions_total"); err != nil {
		t.Error(err)
	}
}

// fakeHTTP is an HTTPSource with fixed counts.
type fakeHTTP httplimit.Stats

func (f fakeHTTP) Stats() httplimit.Stats { return httplimit.Stats(f) }

func TestHTTPMetrics(t *testing.T) {
	m := miniredis.RunT(t)
	lim := newLimiter(t, hybrid.Config{Addrs: []string{m.Addr()}})
	src := fakeHTTP{Reloads: 4, ReloadErrors: 1, Rules: []httplimit.RuleStats{
		{Name: "search", Allowed: 10, Delayed: 2, Denied: 3, Errors: 1},
		{Name: "trial", Shadow: true, Allowed: 5, ShadowDenied: 7},
	}}
	c, err := New(lim, Config{HTTP: src})
	if err != nil {
		t.Fatal(err)
	}
	want := `
# HELP hybridlimit_http_reload_errors_total Rule sets refused as invalid.
# TYPE hybridlimit_http_reload_errors_total counter
hybridlimit_http_reload_errors_total 1
# HELP hybridlimit_http_reloads_total Rule sets put in force after start.
# TYPE hybridlimit_http_reloads_total counter
hybridlimit_http_reloads_total 4
# HELP hybridlimit_http_requests_total HTTP requests decided by a rule, by outcome.
# TYPE hybridlimit_http_requests_total counter
hybridlimit_http_requests_total{outcome="allowed",rule="search"} 10
hybridlimit_http_requests_total{outcome="allowed",rule="trial"} 5
hybridlimit_http_requests_total{outcome="delayed",rule="search"} 2
hybridlimit_http_requests_total{outcome="delayed",rule="trial"} 0
hybridlimit_http_requests_total{outcome="denied",rule="search"} 3
hybridlimit_http_requests_total{outcome="denied",rule="trial"} 0
hybridlimit_http_requests_total{outcome="error",rule="search"} 1
hybridlimit_http_requests_total{outcome="error",rule="trial"} 0
hybridlimit_http_requests_total{outcome="shadow_denied",rule="search"} 0
hybridlimit_http_requests_total{outcome="shadow_denied",rule="trial"} 7
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "hybridlimit_http_reload_errors_total", "hybridlimit_http_reloads_total", "hybridlimit_http_requests_total"); err != nil {
		t.Error(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	if _, err := reg.Gather(); err != nil {
		t.Error(err)
	}
	// Without a source, no HTTP metric.
	c, _ = New(lim, Config{})
	if n := testutil.CollectAndCount(c, "hybridlimit_http_requests_total", "hybridlimit_http_reloads_total"); n != 0 {
		t.Errorf("%d HTTP metrics without a source", n)
	}
}

// TestWithMiddleware scrapes a real Middleware.
func TestWithMiddleware(t *testing.T) {
	m := miniredis.RunT(t)
	lim := newLimiter(t, hybrid.Config{Addrs: []string{m.Addr()}})
	mw, err := httplimit.New(lim, httplimit.Config{Logger: quiet, Rules: httplimit.RuleSet{Default: &httplimit.Rule{Limits: []hybrid.Limit{hybrid.PerMinute(1)}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := mw.SetRules(httplimit.RuleSet{Default: &httplimit.Rule{Limits: []hybrid.Limit{hybrid.PerMinute(2)}}}); err != nil {
		t.Fatal(err)
	}
	c, err := New(lim, Config{HTTP: mw})
	if err != nil {
		t.Fatal(err)
	}
	want := `
# HELP hybridlimit_http_reloads_total Rule sets put in force after start.
# TYPE hybridlimit_http_reloads_total counter
hybridlimit_http_reloads_total 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "hybridlimit_http_reloads_total"); err != nil {
		t.Error(err)
	}
}

// A Middleware is an HTTPSource (examples/grpcserver's test checks that an
// Interceptor is a GRPCSource, so that promlimit's module does not list
// grpc).
var _ HTTPSource = (*httplimit.Middleware)(nil)
