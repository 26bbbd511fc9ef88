// Command bench measures hybridlimit beside go-redis/redis_rate, the
// per-request Redis design, on the same embedded Redis nodes in the same
// run:
//
//	go run ./bench [-duration 3s] [-instances 4] [-concurrency 64] [-workload all] [-json] [-q]
//
// It starts three Redis nodes on 127.0.0.1 — real redis-server processes
// (internal/redistest.Launch) when redis-server is installed, in-process
// miniredis servers otherwise — and says which on the first line of its
// output, for example
//
//	nodes: 3 redis-server 7.0.15 on 127.0.0.1:40001, 127.0.0.1:40002, 127.0.0.1:40003
//	nodes: 3 miniredis on 127.0.0.1:40001, ... (redis-server not found)
//
// Setting the environment variable HYBRIDLIMIT_BENCH_MINIREDIS=1 forces
// miniredis even when redis-server is installed (the tests do). Figures
// measured on miniredis say little about Redis. Every node is stopped
// before bench exits, also on SIGINT or SIGTERM, which end the run early
// (results measured so far are printed; the interrupted one is not).
//
// # Workloads
//
// The workloads are those of hybrid/bench_test.go:
//
//	hot        one key within its limit, PerSecond(1e9)
//	overlimit  one key far over its limit, PerSecond(10)
//	zipf       Zipf s=1.1 over 1,000,000 keys, PerSecond(1000) per key
//	uniform    100,000 keys picked uniformly, PerMinute(1e6) per key
//
// -workload picks one of them; the default, all, runs the four in this
// order.
//
// # Systems
//
// Each workload runs against two systems, one after the other, for
// -duration each (default 3s; with every run also capped at 2^25
// decisions), with -concurrency goroutines in total (default 64):
//
//   - hybridlimit: -instances hybrid.Limiters (default 4) built with
//     hybrid.Config{Addrs: nodes} and default settings, as that many
//     service instances would; requests go to them round-robin.
//   - redis_rate: one redis_rate.Limiter per node client, every decision
//     one script call. Keys go to nodes by hash/maphash of the key modulo
//     3, not by hybrid's consistent-hash ring: the node of a given key may
//     differ, but the load per node is the same for the same key mix.
//
// The nodes are flushed (FLUSHALL) before each run and the systems are
// built afresh, so every bucket starts full and no local cache is warm.
//
// # Figures
//
//   - decisions/s: decisions made by all goroutines over the run's wall
//     time, failed ones included.
//   - p50, p99: latency of one decision, from a sample of every 8th call.
//   - redis calls/decision: round trips to Redis per decision. For
//     hybridlimit, the sum over instances of the change in
//     Stats().Nodes[].Calls; for redis_rate 1 (one script call each).
//   - admitted/ideal: decisions admitted, as a percentage of what one
//     exact limiter would have admitted: the sum over keys of min(requests
//     for the key, burst + rate × elapsed). Above 100% means the limit was
//     overrun; below, requests were refused that an exact limiter would
//     have admitted.
//   - sources: what decided, as shares of decisions: for hybridlimit the
//     change in Stats().Decisions by Source ("remote 93% deny-cache 7%"),
//     for redis_rate always "remote 100%".
//
// Failed decisions (Redis errors for redis_rate; hybridlimit answers those
// by its failure mode, so only bad input would fail) are counted as not
// admitted, and a line on stderr says how many failed and why.
//
// # Output
//
// By default the nodes line, a line with the settings and a blank line
// are followed by one aligned table, a row per workload and system. With
// -json, stdout holds only one JSON object per line, one per workload and
// system, and the nodes line goes to stderr. Each object has these fields:
//
//	workload                  string   "hot", "overlimit", "zipf" or "uniform"
//	system                    string   "hybridlimit" or "redis_rate"
//	nodes                     string   "redis-server 7.0.15" or "miniredis"
//	decisions                 integer  decisions made in the run
//	seconds                   number   wall time of the run
//	decisions_per_sec         number   decisions / seconds
//	p50_us, p99_us            number   latency percentiles, in microseconds
//	redis_calls_per_decision  number   round trips to Redis per decision
//	admitted                  integer  decisions that admitted the request
//	ideal                     number   what an exact limiter would admit
//	admitted_pct_of_ideal     number   100 × admitted / ideal
//	sources                   object   decisions by source name ("remote",
//	                                   "lease", "deny-cache", "fallback",
//	                                   "fail-open", "fail-closed"); zero
//	                                   counts are left out
//	errors                    integer  decisions that returned an error
//
// -q is accepted and changes nothing: bench prints no progress output.
//
// # Exit status
//
// 0 on success, 2 for a bad command line (a one-line message on stderr),
// 1 for any other error, including an interrupted run.
package main
