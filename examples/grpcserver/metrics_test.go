package main

// promlimit's scrape of a real Interceptor lives here, in the examples'
// module, so that promlimit's own module does not list grpc.

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"

	"github.com/hybridlimit/hybridlimit/grpclimit"
	"github.com/hybridlimit/hybridlimit/hybrid"
	"github.com/hybridlimit/hybridlimit/promlimit"
	"github.com/hybridlimit/hybridlimit/rules"
)

var quiet = slog.New(slog.DiscardHandler)

// fakeHTTP is a promlimit.HTTPSource with fixed counts.
type fakeHTTP rules.Stats

func (f fakeHTTP) Stats() rules.Stats { return rules.Stats(f) }

// TestWithInterceptor scrapes a real grpclimit.Interceptor with
// promlimit, beside an HTTP source: the same metrics, named grpc_, with no clash.
func TestWithInterceptor(t *testing.T) {
	m := miniredis.RunT(t)
	lim, err := hybrid.New(hybrid.Config{Addrs: []string{m.Addr()}, Lease: hybrid.LeaseConfig{Disable: true}, Timeout: 2 * time.Second, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer lim.Close()
	rules := grpclimit.RuleSet{Rules: []grpclimit.Rule{{Name: "check", Method: "/grpc.health.v1.Health/Check", Limits: []hybrid.Limit{hybrid.PerMinute(1)}}}}
	ic, err := grpclimit.New(lim, grpclimit.Config{Logger: quiet, Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	unary := ic.Unary()
	info := &grpc.UnaryServerInfo{FullMethod: "/grpc.health.v1.Health/Check"}
	handler := func(context.Context, any) (any, error) { return "ok", nil }
	for range 2 {
		unary(context.Background(), nil, info, handler) //nolint:errcheck // counted below
	}
	rules.Rules[0].Shadow = true
	if err := ic.SetRules(rules); err != nil {
		t.Fatal(err)
	}
	if err := ic.SetRules(grpclimit.RuleSet{Rules: []grpclimit.Rule{{Name: "bad"}}}); err == nil {
		t.Fatal("SetRules(bad) = nil")
	}
	c, err := promlimit.New(lim, promlimit.Config{GRPC: ic, HTTP: fakeHTTP{Reloads: 4}})
	if err != nil {
		t.Fatal(err)
	}
	want := `
# HELP hybridlimit_grpc_reload_errors_total Rule sets refused as invalid.
# TYPE hybridlimit_grpc_reload_errors_total counter
hybridlimit_grpc_reload_errors_total 1
# HELP hybridlimit_grpc_reloads_total Rule sets put in force after start.
# TYPE hybridlimit_grpc_reloads_total counter
hybridlimit_grpc_reloads_total 1
# HELP hybridlimit_grpc_requests_total gRPC calls (and stream messages) decided by a rule, by outcome.
# TYPE hybridlimit_grpc_requests_total counter
hybridlimit_grpc_requests_total{outcome="allowed",rule="check"} 1
hybridlimit_grpc_requests_total{outcome="delayed",rule="check"} 0
hybridlimit_grpc_requests_total{outcome="denied",rule="check"} 1
hybridlimit_grpc_requests_total{outcome="error",rule="check"} 0
hybridlimit_grpc_requests_total{outcome="shadow_denied",rule="check"} 0
# HELP hybridlimit_http_reloads_total Rule sets put in force after start.
# TYPE hybridlimit_http_reloads_total counter
hybridlimit_http_reloads_total 4
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "hybridlimit_grpc_reload_errors_total", "hybridlimit_grpc_reloads_total",
		"hybridlimit_grpc_requests_total", "hybridlimit_http_reloads_total"); err != nil {
		t.Error(err)
	}
	reg := prometheus.NewPedanticRegistry() // checks Describe against Collect
	reg.MustRegister(c)
	if _, err := reg.Gather(); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) != 0 {
		t.Errorf("lint: %v, %v", problems, err)
	}
	// Without a source, no gRPC metric.
	c, _ = promlimit.New(lim, promlimit.Config{})
	if n := testutil.CollectAndCount(c, "hybridlimit_grpc_requests_total", "hybridlimit_grpc_reloads_total"); n != 0 {
		t.Errorf("%d gRPC metrics without a source", n)
	}
}

// An Interceptor is a promlimit.GRPCSource: its Stats are rules.Stats.
var _ promlimit.GRPCSource = (*grpclimit.Interceptor)(nil)
