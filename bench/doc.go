// Command bench measures hybridlimit beside the per-request Redis design,
// go-redis/redis_rate, on the same Redis nodes in the same run: closed
// loop, open loop at rising offered loads, over lease sizes, and while a
// node is killed, paused, restarted, slow or flapping, or a Redis Cluster
// fails over or moves slots:
//
//	go run ./bench                      # the comparison table, about 30 s
//	go run ./bench -sweep load          # open-loop latency: table and latency-throughput.svg
//	go run ./bench -sweep lease         # lease tuning: table and lease-sweep.svg
//	go run ./bench -fault kill          # fault timeline: table and fault-timeline.svg
//	go run ./bench -fault slow          # the same while one node's replies take 25ms
//	go run ./bench -cluster -fault failover   # a cluster master killed, its replica promoted
//	go run ./bench -cluster -fault reshard    # 2,000 slots moved by redis-cli under load
//	go run ./bench -cluster -fault scale-out  # a master added, the slots rebalanced onto it
//	go run ./bench -report docs/figures.md    # all of them: one Markdown report and its charts
//
// go run ./bench -h lists the flags with their defaults. A bad command
// line exits with status 2 and a one-line message; any other error,
// including an interrupted run, with 1.
//
// # Nodes
//
// By default bench starts three nodes on 127.0.0.1: redis-server
// processes on free ports (internal/testkit/redistest) when redis-server
// is on PATH or named by REDIS_SERVER_BIN, in-process miniredis servers
// otherwise, or when HYBRIDLIMIT_BENCH_MINIREDIS=1 (figures measured on
// miniredis say little about Redis). The first line of output says which.
// Embedded nodes are emptied with FLUSHALL before each run and stopped
// before bench exits, also on SIGINT or SIGTERM, which end the run early:
// the results measured so far are printed.
//
// -nodes uses existing nodes instead: a comma-separated list of redis://
// or rediss:// URLs as redis.ParseURL reads them. -tls-ca, -tls-cert and
// -tls-key set TLS for their rediss:// URLs. On a node it did not start,
// bench writes and deletes (SCAN and UNLINK) only keys that start with
// "hlb:{hlbench:<run id>:" (hybridlimit's) or "rate:hlbench:<run id>:"
// (redis_rate's), the run id random per process, and never runs FLUSHALL.
//
// -cluster runs on a Redis Cluster instead: an embedded one of 3 masters
// and 3 replicas (node timeout 1s), or with -nodes the existing cluster
// those seed URLs name (database 0, one user and password). hybridlimit
// takes the cluster as one node (a *redis.ClusterClient through
// remote.BoundClusterOptions, a breaker per master); redis_rate runs on
// one cluster client of go-redis's defaults.
//
// # Workloads
//
//	hot        one key within its limit; default limit 1000000000/s
//	overlimit  one key far over a fast limit; default limit 10000/s
//	zipf       Zipf (s = -zipf, 1.1) over -keys keys (1,000,000); default limit 1000/s per key
//	uniform    -keys keys (100,000) picked uniformly; default limit 1000000/m per key
//	seed       Zipf over -keys keys (10,000,000); default limits 100/m+1000/h per key;
//	           only when named (-workload seed)
//
// seed is the seed's service (issue 14): 10 M clients, each under 100
// requests a minute and 1000 an hour, so that its CPU per decision sizes
// a fleet for 500 K requests/s (docs/capacity.md). Its keys are made from
// their index per request ("hlbench:<run id>:s:<i>", 25 bytes, about 45 ns:
// BenchmarkKey) for both systems, rather than held in memory as zipf's
// and uniform's are. -limit replaces every workload's limits: one, or
// several joined by '+', each request charged against all of them;
// -algorithm applies to each. In -sweep lease the hot key's limit is
// 1000000/s, below what the load asks, so that lease size matters.
//
// Every goroutine making calls passes a context of its own, derived from
// the run's, as each request of a server has one.
//
// # Systems
//
// Each workload runs against both systems in turn, -duration each, with
// -concurrency goroutines in total, on emptied nodes with nothing warm:
//
//   - hybridlimit: -instances hybrid.Limiters over the same nodes, each
//     with clients of its own (remote.NewClient), Prefix "hlb:",
//     Lease.MaxFraction from -lease-fraction, every other setting its
//     default; requests go to them round-robin. A request is one
//     AllowN(ctx, key, 1, limits...), all its limits at once.
//   - redis_rate: one redis_rate.Limiter per node client, keys placed by
//     maphash modulo the node count (the same load per node for the same
//     key mix). It has no call that takes several limits, so a request
//     asks one Allow per limit in -limit's order, each on its own key
//     ("<key>:100/m"), until one denies; the limits before stay charged.
//     Its one algorithm, GCRA, runs each limit's rate, period and
//     capacity whatever -algorithm says.
//
// A run ends after -duration, or after 2^30 decisions.
//
// # Figures
//
//   - decisions/s: decisions over the run's wall time, failed ones
//     included.
//   - p50, p99: latency of every 8th call, from an HDR histogram
//     (nanoseconds, 2 significant digits: within 1%).
//   - redis calls/decision: round trips to Redis per decision (hybrid's
//     Stats().Nodes[].Calls; one per redis_rate Allow).
//   - cpu/decision client+redis: CPU time per decision of the bench
//     process (getrusage) and of the nodes (INFO cpu, replicas included;
//     "?" on miniredis). After the table a line per workload gives the
//     cores each system needs for 500,000 decisions/s at that cost: the
//     figure that scales to a fleet.
//   - admitted/ideal: decisions admitted as a percentage of what an exact
//     limiter could have admitted: the sum over keys of min(requests, the
//     key's capacity from its first admission to the run's end). For rate
//     R per period P with capacity C over T: C + R·T/P for token and leaky
//     bucket (and redis_rate); R × the windows of Unix time touched for
//     fixed window; R × (⌊T/P⌋ + 1) for sliding-window-log; what package
//     limit admits to a key asking for all it has at every step for
//     sliding-window-counter; with several limits, the least. Above 100%
//     a limit was overrun; below, requests were refused that an exact
//     limiter would have admitted.
//   - sources: what decided, as shares (Result.Source).
//
// Failed decisions count as not admitted and a line on stderr says how
// many failed and why; hybrid answers Redis failures from its failure
// mode, so only bad input fails there. hybrid's warnings go to stderr.
// -cpuprofile FILE profiles the run; each system's goroutines carry the
// pprof labels system and workload, so that go tool pprof -tagfocus
// system=hybridlimit FILE shows one side's CPU.
//
// # Lease tuning: -sweep lease
//
// hot and zipf (or -workload) once against redis_rate and once against
// hybridlimit per Lease.MaxFraction of off, 0.001, 0.0025, 0.005, 0.01
// (the default), 0.02 and 0.05, 2s each by default. The units outstanding
// in leases, summed over instances, are sampled every 20 ms: "lease units
// max" is the largest sample and "bound" the same as a percentage of
// ideal, the most admitted/ideal could exceed 100% by. lease-sweep.svg
// plots decisions/s (log scale) and admitted/ideal against lease size.
//
// # Open-loop latency: -sweep load
//
// The comparison's latencies are closed loop: a slow call holds back the
// calls that would have come meanwhile. -sweep load offers fixed loads
// instead: Poisson arrivals at 5000, 10000, 20000, 30000, 50000, 75000,
// 100000, 150000, 200000, 300000, 500000, 750000, 1000000, 1500000,
// 2000000, 3000000 and 5000000 decisions/s (up to -max-load), due at
// times drawn from a seeded source, whatever the calls before did. A
// dispatcher on a thread of its own releases each arrival when due into a
// queue that -concurrency workers (512) serve; latency runs from the due
// time to the return, so the wait for a busy worker counts (no
// coordinated omission). A step offers arrivals for -duration (2s);
// arrivals still queued 1s after it are abandoned and counted with the
// time they waited, and more than 65,536 queued end the step.
//
// Per workload (zipf and uniform unless -workload says), both systems are
// built once and warmed at the first step's rate for 500ms; then at each
// step they run in turn on the same arrivals, their state carried over as
// in a service whose load rises. A system stops at its first limited
// step, as "limited by" says:
//
//   - generator: the generator alone could not offer the load (its calls
//     returned at under 90% of the arrival rate, arrivals were abandoned
//     or filled the queue, or its p99 passed 50 ms);
//   - system: otherwise, when the system's calls did one of those (50 ms
//     is hybrid.DefaultTimeout, past which a step measures the queue).
//
// The generator runs beside the systems and on a few cores may not keep
// its schedule, so its lateness is measured every step (gen lag p99), and
// at the first step and wherever a p99 reaches 1 ms, the lag passes 500
// µs or a system is limited, the generator also runs alone against a
// system that answers at once: the row "generator", its own floor. A
// step whose generator was behind says "- (the generator fell behind:
// ...)". One line per workload then gives the highest offered load each
// system kept up with at p99 below 1 ms, and what happened at the next
// step ("≥" where that is a lower bound). latency-throughput.svg plots
// p99 against offered load, log scales, with the 1 ms target. hot and
// overlimit run only when named: their sweeps end at the generator.
//
// # Fault timeline: -fault kill|pause|restart|slow|flap|failover|reshard|scale-out
//
// Embedded nodes only; failover, reshard and scale-out need -cluster and
// are the only faults there. Half the goroutines ask for 6 hot keys
// (served from leases), half for Zipf keys, through -instances Limiters,
// for -duration (12s). The victim is the node owning the most hot keys,
// read from a ring built as hybrid builds its own (shard.New) and checked
// against the Limiters' calls; on a cluster, the master owning them (from
// CLUSTER SLOTS, the breaker watched being that master's). At a third of
// the run bench:
//
//   - kill: SIGKILLs it (miniredis: Close); it stays down;
//   - pause: SIGSTOP, SIGCONT at two thirds (miniredis cannot freeze: it
//     is closed and restarted on the same address);
//   - restart: kills it and starts an empty one on the same port;
//   - slow: delays its replies by half the Limiter's Timeout (25ms ±
//     20%) until two thirds: slow but answering, its breaker should stay
//     closed;
//   - flap: takes the path to it down and up every 100–300ms (a fixed
//     seed) until two thirds; down, connections are reset and refused;
//   - failover: kills the master and polls its replica until it reports
//     role:master (about 2–3s). redis_rate on one cluster client is asked
//     for a key of the master every 5ms until its first success; go-redis
//     reloads its slot map only every 60s or on MOVED, so it is usually
//     not back within the run;
//   - reshard: redis-cli --cluster reshard moves 2,000 slots from the
//     victim to the next master, keys and all, under load (ASK, TRYAGAIN
//     and MOVED replies);
//   - scale-out: a fourth master joins (add-node) and takes a quarter of
//     the slots (rebalance); -duration 20s. Before either move 60,000
//     keys of 64 bytes are written over every slot so that slots move as
//     slowly as on a cluster with data. Alongside, redis_rate is asked by
//     4 goroutines for 1,000 of the victim's keys. Both need redis-cli.
//
// slow and flap act through toxiproxy run in process in front of the
// victim (internal/testkit/toxitest), dialled from the start of the run;
// it costs the victim about 55µs per round trip on a 2-core VM, so its
// p99 before the fault is above the others'.
//
// A row per -interval (1s) gives decisions/s and by source, errors
// returned to callers (hybridlimit answers Redis failures in process),
// p99, the instances with the victim's breaker open or half-open, its
// openings and closings, the share of the victim's decisions answered by
// the failure mode, the p99 of the victim's and the others' answers from
// Redis, and what the injector did. A summary follows: errors, the
// victim's failure-mode share from the fault to its return, how long
// until every breaker opened and closed again, and per fault the
// promotion, redis_rate's return or the move's figures. fault-timeline.svg
// plots decisions/s by source and p99 over time, the fault marked.
// Latency is timed on one call in 8, and on every Zipf call for the
// answers from Redis.
//
// # The standard set: -report
//
// -report FILE runs, in this process, each mode as its own command
// would, on nodes of its own: the comparison, the seed's workload on one
// instance (which docs/capacity.md sizes a service from), -sweep lease,
// -sweep load, the fault timelines kill, pause, restart, slow and flap,
// and failover, reshard and scale-out on an embedded cluster where the
// nodes are redis-server (the last two where redis-cli is installed). It
// writes one Markdown report to FILE with the charts beside it: the date,
// command, commit, machine, OS, load average, Go and Redis versions, then
// each section with its command, its time, its tables and its chart.
// Everything is written beside FILE and moved into place only when every
// section has run. Only -duration, -interval, -max-load, -instances,
// -concurrency, -keys, -q, -nodes, -cluster and -tls-* go with -report,
// passed to the sections (with -nodes no fault timeline runs; with
// -cluster only the cluster's).
//
// # Output
//
// The nodes line, the settings, the limits and a table (and "wrote
// <path>" for a chart). With -json, stdout holds only JSON objects, one
// per line, each one of the types of results.go named by its "type":
// "result" (a row of the comparison or -sweep lease), "load" (a step of
// -sweep load, per step and system as each is judged), "second" (a row of
// a fault timeline) and "fault" (its summary). The comments on their
// fields are the schema: go doc -u -all ./bench shows them. bench draws a
// progress bar on stderr when it is a terminal, unless -q.
package main
