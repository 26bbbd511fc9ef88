package promlimit_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hybridlimit/hybridlimit/httplimit"
	"github.com/hybridlimit/hybridlimit/hybrid"
	"github.com/hybridlimit/hybridlimit/promlimit"
)

func ExampleNew() {
	m, err := miniredis.Run() // a service passes its Redis nodes instead
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	lim, err := hybrid.New(hybrid.Config{Addrs: []string{m.Addr()}})
	if err != nil {
		log.Fatal(err)
	}
	defer lim.Close()
	mw, err := httplimit.New(lim, httplimit.Config{})
	if err != nil {
		log.Fatal(err)
	}

	// One collector for the Limiter and the Middleware; serve the registry
	// with promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).
	c, err := promlimit.New(lim, promlimit.Config{HTTP: mw})
	if err != nil {
		log.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)

	if _, err := lim.Allow(context.Background(), "user:42", hybrid.PerMinute(10)); err != nil {
		log.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		log.Fatal(err)
	}
	for _, mf := range mfs {
		fmt.Println(mf.GetName(), strings.ToLower(mf.GetType().String()))
	}
	// Output:
	// hybridlimit_decisions_total counter
	// hybridlimit_deny_cache_keys gauge
	// hybridlimit_http_reload_errors_total counter
	// hybridlimit_http_reloads_total counter
	// hybridlimit_lease_keys gauge
	// hybridlimit_lease_units gauge
	// hybridlimit_lease_units_lost_total counter
	// hybridlimit_lease_units_unknown_total counter
	// hybridlimit_node_batched_total counter
	// hybridlimit_node_breaker_opened_total counter
	// hybridlimit_node_breaker_state gauge
	// hybridlimit_node_calls_total counter
	// hybridlimit_node_degraded gauge
	// hybridlimit_node_errors_total counter
	// hybridlimit_node_latency_seconds histogram
	// hybridlimit_node_may_evict gauge
	// hybridlimit_node_undecided_total counter
	// hybridlimit_undecided_no_node_total counter
}
