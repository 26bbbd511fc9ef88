// Package promlimit exports the counters of a hybrid.Limiter, and
// optionally of an httplimit.Middleware and a grpclimit.Interceptor, to
// Prometheus.
//
//	c, err := promlimit.New(lim, promlimit.Config{HTTP: mw, GRPC: ic})
//	if err != nil { ... }
//	prometheus.MustRegister(c)
//	http.Handle("GET /metrics", promhttp.Handler())
//
// The Collector holds no state of its own: at each scrape it reads
// lim.Stats() (and mw.Stats(), ic.Stats()) and emits constant metrics, so the
// Limiter's hot path pays nothing for them. Metric names, with the default
// namespace "hybridlimit":
//
//	hybridlimit_decisions_total{source,outcome}      counter: requests answered, by Source ("remote", "lease", "deny-cache", "fallback", "fail-open", "fail-closed") and outcome ("allowed", "denied")
//	hybridlimit_node_calls_total{node}               counter: round trips to the node
//	hybridlimit_node_errors_total{node}              counter: failed round trips (timeouts included)
//	hybridlimit_node_batched_total{node}             counter: requests decided in round trips of more than one
//	hybridlimit_node_latency_seconds{node}           histogram: round-trip time
//	hybridlimit_node_breaker_state{node,state}       gauge: 1 for the breaker's state ("closed", "open", "half-open"), 0 for the others
//	hybridlimit_node_breaker_opened_total{node}      counter: times the breaker opened
//	hybridlimit_node_degraded{node}                  gauge: 1 while the node's keys are answered by the failure mode (fallback active)
//	hybridlimit_node_undecided_total{node,reason}    counter: answers for the node's keys given by the failure mode, by hybrid.Reason ("breaker-open", "timeout", "transport", "server", "queued", "cancelled", "config", "cluster", "queue-full")
//	hybridlimit_undecided_no_node_total              counter: answers given by the failure mode because the ring had no node
//	hybridlimit_node_may_evict{node,policy}          gauge: 1 when the node's maxmemory-policy can evict limiter keys; policy "" where CONFIG GET is not allowed
//	hybridlimit_lease_keys                           gauge: keys served from leases
//	hybridlimit_lease_units                          gauge: units held in leases, the most the limits may be exceeded by now
//	hybridlimit_lease_units_lost_total               counter: units leased that were, for certain, neither spent nor given back
//	hybridlimit_lease_units_unknown_total            counter: units of lease batches and give-backs sent that got no answer: perhaps taken, perhaps not
//	hybridlimit_deny_cache_keys                      gauge: keys the denial cache holds
//
// and with Config.HTTP:
//
//	hybridlimit_http_requests_total{rule,outcome}    counter: requests per rule, by outcome ("allowed", "delayed", "denied", "shadow_denied", "error")
//	hybridlimit_http_reloads_total                   counter: rule sets put in force after start
//	hybridlimit_http_reload_errors_total             counter: rule sets refused as invalid
//
// and with Config.GRPC the same three for gRPC (outcomes as above; a
// PerMessage rule counts each stream message too):
//
//	hybridlimit_grpc_requests_total{rule,outcome}    counter: calls per rule, by outcome
//	hybridlimit_grpc_reloads_total                   counter: rule sets put in force after start
//	hybridlimit_grpc_reload_errors_total             counter: rule sets refused as invalid
//
// Counters restart from zero with the process, as Prometheus expects. Only
// the rules in force are reported; a rule keeps its counts across reloads
// for as long as it keeps its name.
package promlimit
