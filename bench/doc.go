// Command bench shows what hybridlimit does better than the per-request
// Redis design, go-redis/redis_rate, on the same Redis nodes in the same
// run, measures both open loop at rising offered loads, helps choose a
// lease size, and shows what happens while a node is killed, paused,
// restarted, slow or flapping, or a Redis Cluster fails over:
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
// # Nodes
//
// By default bench starts three Redis nodes on 127.0.0.1 — real
// redis-server processes on free ports (internal/testkit/redistest.Launch) when
// redis-server is on PATH (or named by REDIS_SERVER_BIN), in-process
// miniredis servers otherwise — and says which on the first line of its
// output, for example
//
//	nodes: 3 redis-server 7.0.15 on 127.0.0.1:40001, 127.0.0.1:40002, 127.0.0.1:40003
//	nodes: 3 miniredis on 127.0.0.1:40001, ... (redis-server not found)
//
// Setting the environment variable HYBRIDLIMIT_BENCH_MINIREDIS=1 forces
// miniredis even when redis-server is installed (the tests do). Figures
// measured on miniredis say little about Redis. Embedded nodes are
// emptied with FLUSHALL before each run, and every one is stopped before
// bench exits, also on SIGINT (Ctrl-C) or SIGTERM, which end the run early:
// the results measured so far are printed, the interrupted one is not, and
// the exit status is 1.
//
// -nodes uses existing nodes instead and starts none: a comma-separated
// list of redis:// or rediss:// (TLS) URLs as redis.ParseURL reads them,
// with user, password, database and query options such as
// ?skip_verify=true, for example
//
//	go run ./bench -nodes 'redis://:secret@10.0.0.1:6379,rediss://user:pw@10.0.0.2:6380/2'
//
// -tls-ca, -tls-cert and -tls-key set TLS for the rediss:// URLs of
// -nodes, on both systems' clients: the PEM file of -tls-ca holds the CA
// certificates that verify the servers (instead of the system's roots),
// and -tls-cert with -tls-key is the client certificate, for servers that
// require one (redis-server --tls-auth-clients yes). Either of -tls-cert
// and -tls-key without the other, any of them without -nodes or with no
// rediss:// URL, and -tls-ca with ?skip_verify=true are usage errors.
//
//	go run ./bench -nodes rediss://10.0.0.1:6380 -tls-ca ca.pem -tls-cert client.pem -tls-key client.key
//
// -cluster runs on a Redis Cluster instead of independent nodes:
// hybridlimit takes the cluster as one node (hybrid.Config.Nodes with a
// *redis.ClusterClient whose options pass through
// remote.BoundClusterOptions; a breaker per master), redis_rate runs on
// one cluster client. Alone, -cluster starts an embedded cluster of 3
// masters and 3 replicas (internal/testkit/redistest.LaunchCluster, node timeout
// 1s). With -nodes, the URLs are seed nodes of one existing cluster and
// nothing is started: they must be of database 0 and share one user and
// password and redis:// or rediss://, and one of them must report
// cluster_state:ok (a node not in cluster mode is an error).
//
//	go run ./bench -cluster -nodes 'redis://:secret@10.0.0.1:7000,redis://:secret@10.0.0.2:7000'
//
// On a cluster, the masters that serve the slots are read with CLUSTER
// SLOTS whenever bench cleans up, so that a failover in between is
// followed, and bench's keys are deleted on each master by SCAN and one
// UNLINK per key (pipelined; a multi-key UNLINK across slots would be
// refused with CROSSSLOT): before each run on an existing cluster
// (FLUSHALL on the embedded one's masters), and before bench exits on
// both.
//
// Each node must answer PING. Every key bench writes there starts with
// "hlb:{hlbench:<run id>:" (hybridlimit's) or "rate:hlbench:<run id>:"
// (redis_rate's), where the run id is random per process; bench deletes
// exactly those keys (SCAN and UNLINK) before each run and before it
// exits, and never runs FLUSHALL or touches another key on a node it did
// not start. On a shared node, other traffic shares the figures.
//
// # Workloads
//
// The workloads are those of hybrid/bench_test.go, and the seed's:
//
//	hot        one key within its limit; default limit 1000000000/s
//	overlimit  one key far over a fast limit; default limit 10000/s
//	zipf       Zipf (s = -zipf, 1.1) over -keys keys (1,000,000); default limit 1000/s per key
//	uniform    -keys keys (100,000) picked uniformly; default limit 1000000/m per key
//	seed       Zipf (s = -zipf, 1.1) over -keys keys (10,000,000); default limits
//	           100/m+1000/h per key; not in -workload all
//
// seed is the workload of the seed's service (issue 14): 10 M clients of
// Zipf-like popularity, each under 100 requests a minute and 1000 an
// hour, so that its CPU per decision can be read for a capacity plan
// (500 K requests/s over those clients). It runs only when named, in the
// comparison (go run ./bench -workload seed) and in -sweep load (-sweep
// load -workload seed), and, like the others, takes -keys, -zipf, -limit
// and -algorithm. Its keys are made from their index for each request
// ("hlbench:<run id>:s:<i>", one allocation of 25 bytes, about 45 ns
// more than a key held in memory: BenchmarkKey), the same for both
// systems, rather than held, as zipf and uniform hold theirs: 10 M keys
// held take 0.9 s to build and 456 MB of heap. For admitted/ideal the
// run counts the requests per key with an atomic add into a count per key
// (4 bytes a key, 40 MB for 10 M) and notes when each key's first
// admission was answered (8 bytes a key).
//
// Every goroutine making calls (and every worker of -sweep load) passes a
// context of its own, derived from the run's, as each request of a server
// has one: with one context shared by all, every call of both systems
// selected on the same Done channel, and the callers queued on its lock.
//
// -limit replaces the limits of every workload at once: one limit, or
// several joined by '+' (-limit 100/m+1000/h), every request charged
// against all of them (see Systems); -algorithm applies to each. A list
// hybrid refuses (a limit given twice, more than hybrid.MaxLimits) is a
// usage error, with hybrid's message. In -sweep lease the hot key's
// default limit is 1000000/s instead, below what the load asks of it, so
// that lease size matters and accuracy can be read; in -fault the hot
// keys keep 1000000000/s and the zipf keys 1000/s.
//
// # Systems
//
// Each workload runs against two systems, one after the other, for
// -duration each, with -concurrency goroutines in total:
//
//   - hybridlimit: -instances hybrid.Limiters over the same nodes
//     (Config.Nodes, each instance with clients of its own built by
//     remote.NewClient, Prefix "hlb:", Lease.MaxFraction from
//     -lease-fraction, every other setting its default), as that many
//     service instances would be; requests go to them round-robin. Each
//     request is one AllowN(ctx, key, 1, limits...) against all the
//     workload's limits at once, all or nothing.
//   - redis_rate: one redis_rate.Limiter per node client, one script call
//     per limit. redis_rate has no call that takes several limits, so a
//     request with several is asked as its user would ask it: one Allow
//     per limit, in -limit's order, each on a key of its own (the key, a
//     colon and the limit: "<key>:100/m"; with one limit the key alone),
//     stopping at the first denial. The limits before the one that denied
//     stay charged: redis_rate cannot give back what an Allow took, so a
//     denied request still spends, say, a minute's allowance, and
//     redis_rate may admit less than an all-or-nothing limiter would.
//     Keys go to nodes by hash/maphash of the key (a request's keys, one
//     per limit, to the node of the key) modulo the node count, not by
//     hybrid's consistent-hash ring: the node of a given key may differ,
//     but the load per node is the same for the same key mix. redis_rate
//     has one algorithm, GCRA (a token bucket): it runs with each limit's
//     rate, period and capacity whatever -algorithm says.
//
// The systems are built afresh for each run on emptied nodes, so every
// bucket starts full and no local cache is warm. A run ends after
// -duration, or when its goroutines have made 2^30 decisions.
//
// # Figures
//
//   - decisions/s: decisions made by all goroutines over the run's wall
//     time, failed ones included.
//   - p50, p99: latency of one decision, from every 8th call, read from an
//     HDR histogram (github.com/HdrHistogram/hdrhistogram-go, nanoseconds,
//     2 significant digits: within 1%), as every latency bench reports.
//   - redis calls/decision: round trips to Redis per decision. For
//     hybridlimit, the sum over instances of the change in
//     Stats().Nodes[].Calls; for redis_rate the Allow calls (one script
//     call each): 1 with one limit, with several one per limit asked, up
//     to the first denial.
//   - admitted/ideal: decisions admitted, as a percentage of the most an
//     exact limiter could have admitted: the sum over keys of
//     min(requests for the key, its capacity over the run), where the
//     capacity over the T seconds from the key's first admission (when
//     its answer came) to the run's end, starting with no use, is, for a
//     limit of rate R per period P with capacity C: C + R·T/P for
//     token-bucket and leaky-bucket (and redis_rate), what package limit
//     admits to a key asked for all it has at every step for
//     sliding-window-counter (about R + R·T/P), R × the windows of Unix
//     time the interval touches for fixed-window, R × (⌊T/P⌋ + 1) for
//     sliding-window-log (its units come back a period after they were
//     taken: a 3 s run at 10,000/s admits 30,000, not 40,000); with
//     several limits, the least of their capacities. Above 100% a limit
//     was overrun; below, requests were refused that an exact limiter
//     could have admitted.
//   - sources: what decided, as shares of decisions (Result.Source:
//     "remote 93% deny-cache 7%"); for redis_rate always "remote 100%".
//
// Failed decisions (Redis errors for redis_rate; hybridlimit answers those
// by its failure mode, so only bad input would fail) are counted as not
// admitted, and a line on stderr says how many failed and why. hybrid's
// own log (warnings: a node not ready, a breaker opening) goes to stderr.
//
// # Lease tuning: -sweep lease
//
// Runs the hot and zipf workloads (or the one -workload names) once
// against redis_rate, as the baseline, and once against hybridlimit for
// each Lease.MaxFraction of off (leases disabled), 0.001, 0.0025, 0.005,
// 0.01 (hybrid's default), 0.02 and 0.05, for -duration each (default 2s
// here, so about 32 s for the two workloads). While a run goes, the sum
// of Stats().LeaseUnits over the instances is sampled every 20 ms: the
// units outstanding in leases, the most the limit can be overrun by at
// that moment. The table adds the columns lease (the fraction, as a
// percentage of the limit), lease units max, and bound: the largest
// sample as a percentage of ideal. The chart lease-sweep.svg, in -out,
// has two panels against lease size: decisions/s (log scale), hybridlimit
// solid, redis_rate dashed; and admitted/ideal (%), hybridlimit solid,
// "bound" dashed (100% + bound: where admitted/ideal could at most be).
// -lease-fraction cannot be given with -sweep lease.
//
// # Open-loop latency: -sweep load
//
// The comparison's p50 and p99 are closed loop: each goroutine sends its
// next request when its last one returns, so a slow call holds back the
// calls that would have come meanwhile instead of being felt by them, and
// at saturation the figures show the queue of -concurrency callers.
// -sweep load offers fixed loads instead, open loop: the arrivals of a
// Poisson process at a rate (decisions/s), each due at a time drawn from
// a seeded source before the step, whatever the calls before it did. A
// dispatcher on a thread of its own releases each arrival when it is due
// into a queue that -concurrency workers (default 512 here) take arrivals
// from; a call's latency runs from its arrival's due time to its return,
// so an arrival that waits because every worker is busy counts its wait
// (no coordinated omission). Latencies are counted in an HDR histogram
// (within 1%, as in the comparison) and read for p50, p99, p99.9 and max.
//
// The offered load steps through 5000, 10000, 20000, 30000, 50000, 75000,
// 100000, 150000, 200000, 300000, 500000, 750000, 1000000, 1500000,
// 2000000, 3000000 and 5000000 decisions/s (those up to -max-load), with
// arrivals due for -duration per step (default 2s here). For each
// workload, zipf and uniform unless -workload says otherwise, both
// systems are built once as in the comparison (on emptied nodes,
// -instances Limiters, the same clients) and warmed up at the first
// step's rate for 500ms, unreported; then at each step hybridlimit and
// redis_rate run in turn, on the same schedule of arrivals, so that a
// change in the machine's load between steps touches both. Their state
// (buckets, leases, the denial cache) carries over from step to step, as
// in a service whose load rises. After a step's window, arrivals still
// queued may start for 1s; the rest are abandoned, and counted in the
// latencies with the time they had waited, so that the percentiles of a
// step that fell behind are lower bounds. More than 65,536 arrivals
// queued end the step at once.
//
// The generator runs in the bench process, beside the systems' clients,
// and on a machine of a few cores, or one shared with other work, it may
// not keep its schedule: the dispatcher's lateness releasing arrivals is
// measured on every step (the column gen lag p99), and at the first step
// and at every step where a system's p99 reaches 1 ms, the lag passes
// 500 µs or a system is limited, the generator also runs alone at that
// rate, against a system that answers at once and asks no one: the row
// "generator", its own floor. A system stops stepping at its first step
// that is limited, which the column limited by says, with why:
//
//   - generator: alone, the generator could not offer this load: its
//     calls returned at less than 90% of the arrivals' rate, arrivals were
//     abandoned or filled the queue, or their p99 passed 50 ms. The
//     step's figures are the generator's, not the system's;
//   - system: otherwise, when the system's calls did one of these (50 ms
//     is hybrid.DefaultTimeout: past it hybridlimit answers from its
//     failure mode, not from Redis, and a step measures the queue).
//
// A step that is not limited may still have had the generator behind:
// its lag p99 in the step, or its lag or p99 alone, above 500 µs, half
// the target (on a quiet 2-core machine the generator alone has a p99 of
// 300-540 µs, most of it the hand-off of an arrival to a parked worker).
// Its lateness is counted in the latencies, as a server counts the time
// a request waits for a processor, so a p99 below 1 ms is the system's
// all the more, and one above may owe as much to the generator as to the
// system; the column limited by then says "- (the generator fell
// behind: ...)".
//
// The hot and overlimit workloads run only when -workload asks for them:
// hybridlimit answers them in process at millions of decisions/s, more
// than a generator on a few cores offers, so their sweep ends where the
// generator's limit is, and says so.
//
// The table has, per workload, system and step: offered/s and achieved/s
// (the calls that returned, over the time from the step's start to the
// last return), p50, p99, p99.9 and max, gen lag p99, redis
// calls/decision, cpu/decision client+redis (the client's includes the
// generator's, the generator row's is the generator's alone), sources and
// limited by. After it, one line per workload gives the highest offered
// load at which each system kept up with p99 below 1 ms, every step below
// it too, and what happened at the next step: "highest load with p99 < 1
// ms, zipf: hybridlimit 20000/s (at 30000/s p99 1.62ms), redis_rate ...";
// "≥" where the steps ran out, or the generator limited the next step or
// was behind at it (with -json the lines are left out: the rows give
// them). The chart latency-throughput.svg, in -out, has a panel per
// workload: p99 against offered load, both on log scales, a line per
// system, the generator alone dashed, and the 1 ms target.
//
// # Fault timeline: -fault kill|pause|restart|slow|flap|failover|reshard|scale-out
//
// Embedded nodes only: with -nodes it is a usage error. failover,
// reshard and scale-out need -cluster (and are the only faults there);
// the others need independent nodes. Half the
// goroutines send requests for 6 hot keys (within their limit, served
// from leases), the other half for Zipf keys, through -instances
// Limiters, for -duration in all (default 12s here). The node owning the
// most hot keys is the victim: bench reads which node owns which key from
// a ring built as hybrid builds its own (shard.New with its default
// Config over the node names), and checks it against the Limiters before
// the load starts: one request per hot key, and the node whose
// Stats().Nodes[].Calls moved must be the ring's. The ring also tells
// which Zipf keys are the victim's, for the victim's columns below. At a
// third of -duration bench
//
//   - kill: kills it (SIGKILL; miniredis: Close); it stays down;
//   - pause: freezes it with SIGSTOP and resumes it with SIGCONT at two
//     thirds; the kernel still accepts connections, requests hang until
//     hybrid's Timeout. miniredis cannot be frozen: pause closes it and
//     resume starts it again on the same address with its data, so
//     connections are refused rather than hanging;
//   - restart: kills it and starts a fresh, empty redis-server on the
//     same port (miniredis: Close, Restart, FLUSHALL and SCRIPT FLUSH),
//     as a failover to an empty replica would;
//   - slow: delays every reply of the node by half the Limiter's Timeout
//     (25ms, hybrid.DefaultTimeout being 50ms), ± 20 % drawn per chunk
//     of reply, until two thirds: a node that is slow but answers within
//     Timeout, whose keys should stay remote and whose breaker should
//     never open. The slow part is the middle third, as for pause, so
//     that the timeline shows the node before, during and after;
//   - flap: takes the path to the node down and up until two thirds,
//     each state lasting 100–300ms (drawn from a fixed seed, so every run
//     flaps alike), then leaves it up. Down, every connection is reset and
//     new ones are refused; the node itself runs on.
//   - failover (-cluster): kills (SIGKILL) the master of the embedded
//     cluster that owns the most hot keys, and polls its replica every
//     10ms until it reports role:master, which is the node's return. The
//     victim is a master, not hybrid's node: which master owns a key is
//     read from CLUSTER SLOTS and the key's slot (CRC16, checked against
//     CLUSTER KEYSLOT), and the breaker watched is that master's
//     (Stats().Nodes[].Shards; the failure mode's Reasons are the whole
//     cluster node's). With node timeout 1s the promotion takes about
//     2–3s. Meanwhile, once the master is marked failed, the other
//     masters answer CLUSTERDOWN too (cluster-require-full-coverage is
//     Redis's default, yes) until the replica takes the slots, so the
//     others' keys fall back for a moment as well. Alongside the load,
//     redis_rate on one cluster client (as in the comparison: go-redis's
//     defaults) is asked for a key of the master every 5ms from the kill
//     until its first success. After the timeline, a line gives, from the
//     kill: the promotion; hybridlimit's first answer from Redis for the
//     master's keys (among the timed calls: every Zipf one) and its last
//     answer from the failure mode for them; redis_rate's first success.
//     go-redis's cluster client keeps sending a dead master's slots to it
//     until its slot map is reloaded (every 60s by default, or on a MOVED
//     reply, which a dead node never sends), so redis_rate is usually not
//     back within the run; hybrid reloads the map after failures. The
//     degraded column stays at every instance after the promotion: the
//     dead master's breaker has no keys left to close it;
//   - reshard (-cluster): redis-cli --cluster reshard moves 2,000 slots,
//     keys and all, from the master that owns the most hot keys to the
//     next one, as an operator does: slot by slot, marked importing and
//     migrating, its keys MIGRATEd ten at a time, then handed over.
//     Requests meanwhile meet ASK, TRYAGAIN (a request whose keys the
//     migration has split) and MOVED. The slots' return is the end of the
//     move;
//   - scale-out (-cluster): a fourth master joins (redis-cli --cluster
//     add-node) and takes a quarter of the slots from the three
//     (rebalance --cluster-use-empty-masters); -duration defaults to 20s
//     here. Before either move 60,000 keys of 64 bytes are written over
//     every slot, so that a slot's move takes as long as on a cluster that
//     holds data (2,000 slots: about 3s on the 2-core VM). The move runs
//     on until it ends even if the run ends first (redis-cli stopped
//     midway would leave slots open). Alongside the load, redis_rate (one
//     cluster client of go-redis's defaults) is asked by 4 goroutines for
//     1,000 keys of the victim master with the zipf limits. After the
//     timeline, a line gives how long the slots moved, hybridlimit's
//     failure-mode answers and errors meanwhile, and redis_rate's calls,
//     errors, p99 and slowest call meanwhile. Both need redis-cli
//     (Debian's redis-tools);
//
// slow and flap act through Shopify's toxiproxy, run in process on a
// loopback port in front of the victim (internal/testkit/toxitest, as hybrid's
// tests use it): every instance's client for that node dials the proxy
// from the start of the run (the node keeps its name, so keys are placed
// as without it); the other nodes are dialled directly. slow adds a
// latency toxic to the replies (a chunk never overtakes the one before;
// requests pass at once) and removes it at the node's return; flap stops
// the proxy (connections closed, new ones refused) and starts it again on
// the same port. The proxy is stopped when the run ends. It costs the
// victim something even before the fault: about 55µs per round trip on
// the 2-core VM (BenchmarkRoundTrip in internal/testkit/toxitest), more on a busy
// machine, where each of its goroutines' hops waits for a processor, so
// that the victim's p99 before the fault is above the others'.
//
// It prints a row per -interval (default 1s): decisions/s, then by
// Source, errors returned to callers (always 0 for hybridlimit, which
// answers Redis failures in process; any non-nil error counts), p99,
// how many instances had the victim's breaker open or half-open, the
// breaker's openings and closings in the row (summed over instances),
// the share of the decisions for the victim's keys answered by the
// failure mode ("victim fm"), the p99 of the victim's answers from Redis
// ("victim p99") and of the other nodes' ("others p99"), and what
// happened in the row (a label repeated in the row is written once with
// its count: "down ×2"). A summary follows: the fault, the errors, the
// share of the victim's decisions answered by the failure mode from the
// fault to the node's return, how long until every instance's breaker was
// open and how often it opened, and how long after the node came back
// until every breaker was closed again. The chart fault-timeline.svg, in
// -out, has decisions/s by Source over time (log scale, 0 drawn at 1;
// "all" dashed) with the fault and the node's return marked, and below it
// p99 over time, with the p99 of the victim's answers from Redis. go-redis's
// own log of refused dials is turned off during the run.
//
// Latency is timed on one call in 8 for p99, and on every call of the
// Zipf half for the victim's and the others' answers from Redis (a few
// in a thousand of the decisions), from the caller's side: on a machine
// whose processors are all busy it includes the wait for one.
//
// # The standard set: -report
//
// -report FILE runs the standard set, one mode after the other, and
// writes one Markdown report to FILE, its charts beside it (FILE's
// directory, created if missing):
//
//	go run ./bench -report docs/figures.md   # several minutes: the sum of its sections
//
// The sections, in this order: the comparison (go run ./bench), the
// seed's workload on one instance (-workload seed -instances 1, which
// docs/capacity.md sizes a service from), -sweep lease, -sweep load, -fault kill, pause, restart, slow and flap, and
// -fault failover, reshard and scale-out on an embedded Redis Cluster
// (-cluster), these only where the embedded nodes are redis-server
// (miniredis has no cluster), and the last two only where redis-cli is
// installed.
// Each runs in this process as its own command runs it alone, on nodes of
// its own, started and stopped as that command would, and names that
// command.
//
// The report opens with the date and how long the run took; the command
// line (passwords hidden); the commit: git rev-parse HEAD when bench runs
// in a git checkout of this module, and whether git status lists
// changes, else the revision go build stamped into the binary, else
// "unknown"; the machine: cores, GOMAXPROCS, the CPU model (from
// /proc/cpuinfo) and the memory (/proc/meminfo); the OS, its distribution
// and kernel; the load average (/proc/loadavg) at the start and at the
// end; the Go version; and the nodes' Redis version. Then the contents,
// with a line for each fault timeline that does not run, and why. Each
// section gives its command, how long it took and the load average at
// its start, then what the mode prints: the nodes, run and limits lines
// and the lines after a table in fenced blocks, the tables as Markdown
// tables, and its chart, linked: lease-sweep.svg, latency-throughput.svg,
// fault-timeline-<fault>.svg. A line on stderr names each section as it
// starts (not with -q); stdout lists the files written. Everything is
// written beside FILE first and moved into place once every section has
// run: an interrupted or failed run leaves an earlier report as it was.
//
// Only these flags go with -report, passed to the sections' commands:
// -duration (per run, point or step, and the length of each fault
// timeline, whose rows are then a twelfth of it, at least 10ms, unless
// -interval says), -interval (the fault timelines), -max-load (the load
// sweep), -instances, -concurrency, -keys, -q, and -nodes, -cluster and
// -tls-*, as the modes take them: with -nodes no fault timeline runs
// (faults are injected into embedded nodes only), with -cluster only
// failover, reshard and scale-out. Any other flag with -report is a usage error: the standard
// set runs each mode with its defaults.
//
// # Flags
//
// go run ./bench -h lists the flags with their defaults.
//
// While it runs, bench draws a progress bar on stderr when stderr is a
// terminal, unless -q is given.
//
// # Output
//
// By default the nodes line, a line with the settings, a line with the
// limits and a blank line are followed by one aligned table (and, for
// -sweep and -fault, "wrote <path>" after it; for -sweep load, the
// highest-load lines between them). With -json, stdout holds only JSON
// objects, one per line, and the nodes line and "wrote <path>" go to
// stderr. Every object has a "type": "result", "second", "fault" or
// "load".
//
// The default table's "cpu/decision client+redis" column is the CPU time
// per decision of the bench process and of the nodes (the JSON fields
// client_cpu_us_per_decision and redis_cpu_us_per_decision; "?" for
// miniredis, which runs in the bench process). After the table, one line
// per workload gives the cores each system would need for 500,000
// decisions/s at that cost, client + Redis: the figure that scales to a
// fleet.
//
// Each JSON object is one of the types of results.go, named by its
// "type": "result" (a row of the comparison or of -sweep lease), "load"
// (a step of -sweep load, one object per step and system, as each step
// is judged), "second" (a row of a fault timeline) and "fault" (the
// timeline's summary, after its rows). The comments on their fields are
// the schema: go doc -u -all ./bench shows them.
//
// # Exit status
//
// 0 on success, 2 for a bad command line (a one-line message on stderr),
// 1 for any other error, including an interrupted run.
package main
