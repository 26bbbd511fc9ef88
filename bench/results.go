package main

// The results of every mode, and the schema of -json: each line of -json
// is one of the types below, named by its "type" field. A field's comment
// is its meaning; JSON numbers are Go's float64 (number) or int
// (integer); a pointer field is null where the comment says so; a map is
// an object of counts, zero counts left out. The tables, the charts and
// -report are drawn from these same values. TestSchemaIsDocumented checks
// that every field has its comment.

// setup is what ran: one workload against one system. Its fields open
// "result" and "load" objects.
type setup struct {
	// "hot", "overlimit", "zipf", "uniform" or "seed".
	Workload string `json:"workload"`
	// "hybridlimit", "redis_rate", or in "load" objects "generator": the
	// generator alone, its calls answered at once by no one.
	System string `json:"system"`
	// The nodes: "redis-server 7.0.15", "miniredis", ...
	Nodes string `json:"nodes"`
	// -algorithm's name; "gcra" for redis_rate, "-" for the generator.
	Algorithm string `json:"algorithm"`
	// The per-key limits as -limit takes them: "1000/s", "100/m+1000/h";
	// "-" for the generator.
	Limit string `json:"limit"`
	// The key-space size.
	Keys int `json:"keys"`
	// hybrid.Limiter instances; 1 for redis_rate, 0 for the generator.
	Instances int `json:"instances"`
	// Goroutines making calls (in "load", the workers).
	Concurrency int `json:"concurrency"`
	// Lease.MaxFraction; 0: leases off, and for redis_rate and the
	// generator.
	LeaseFraction float64 `json:"lease_fraction"`
	// How hybridlimit keeps its states (-layout): "keys" or "compact";
	// "-" for redis_rate and the generator.
	Layout string `json:"layout"`
}

// result is one workload against one system, closed loop: a row of the
// comparison or of -sweep lease.
type result struct {
	// "result".
	Type string `json:"type"`
	// "compare" (the default mode) or "sweep" (-sweep lease).
	Mode string `json:"mode"`
	setup
	// Decisions made in the run, failed ones included.
	Decisions int64 `json:"decisions"`
	// Wall time of the run.
	Seconds float64 `json:"seconds"`
	// Decisions / Seconds.
	DecisionsPerSec float64 `json:"decisions_per_sec"`
	// Latency percentiles of every 8th call, in microseconds.
	P50us float64 `json:"p50_us"`
	P99us float64 `json:"p99_us"`
	// Round trips to Redis per decision.
	RedisCallsPerDecision float64 `json:"redis_calls_per_decision"`
	// Decisions that admitted the request.
	Admitted int64 `json:"admitted"`
	// The most an exact limiter could have admitted (doc.go, Figures).
	Ideal float64 `json:"ideal"`
	// 100 × Admitted / Ideal.
	AdmittedPctOfIdeal float64 `json:"admitted_pct_of_ideal"`
	// The largest sample (every 20 ms) of the units outstanding in
	// leases, summed over instances; 0 without leases.
	LeaseUnitsMax int64 `json:"lease_units_max"`
	// The mean of those samples.
	LeaseUnitsMean float64 `json:"lease_units_mean"`
	// 100 × LeaseUnitsMax / Ideal: the over-admission bound, % of ideal.
	LeaseBoundPct float64 `json:"lease_bound_pct"`
	// Decisions by source name ("remote", "lease", "deny-cache",
	// "fallback", "fail-open", "fail-closed").
	Sources map[string]int64 `json:"sources"`
	// Decisions that returned an error.
	Errors int64 `json:"errors"`
	// CPU time of the bench process (getrusage, user + system) over the
	// run, µs per decision: the client side (with miniredis, the nodes
	// too).
	ClientCPUus float64 `json:"client_cpu_us_per_decision"`
	// CPU time of the nodes (INFO cpu, summed over every server, a
	// cluster's replicas too) over the run, µs per decision; null on
	// miniredis.
	RedisCPUus *float64 `json:"redis_cpu_us_per_decision"`
	// The nodes' memory at the end of the run minus at its start (INFO
	// memory's used_memory, summed as RedisCPUus is, the nodes emptied
	// before), per key the run asked for: what a key's states hold, as
	// long as they live (a state that expired during the run holds
	// nothing: uniform's 1000000/m refills a unit in 60 µs). Null on
	// miniredis, and for a run of fewer than 1000 keys.
	RedisBytesPerKey *float64 `json:"redis_bytes_per_key"`
}

// loadRow is one step of -sweep load: one workload against one system at
// one offered load, open loop.
type loadRow struct {
	// "load".
	Type string `json:"type"`
	setup
	// The step's arrival rate, decisions/s.
	OfferedPerSec float64 `json:"offered_per_sec"`
	// Arrivals released in the step.
	Scheduled int64 `json:"scheduled"`
	// Calls made and returned, failed ones included.
	Decisions int64 `json:"decisions"`
	// Arrivals still queued 1s after the window, never called:
	// Scheduled = Decisions + Abandoned.
	Abandoned int64 `json:"abandoned"`
	// From the step's start to the last return.
	Seconds float64 `json:"seconds"`
	// Decisions / Seconds: the achieved rate.
	DecisionsPerSec float64 `json:"decisions_per_sec"`
	// 100 × DecisionsPerSec / the arrivals' rate: about 100 when the
	// system kept up.
	AchievedPct float64 `json:"achieved_pct"`
	// Latency percentiles (50, 99, 99.9) and the largest latency, µs,
	// from an arrival's due time to its call's return (an abandoned
	// one's: to when it was abandoned).
	P50us  float64 `json:"p50_us"`
	P99us  float64 `json:"p99_us"`
	P999us float64 `json:"p999_us"`
	MaxUs  float64 `json:"max_us"`
	// p99 of how late the dispatcher released arrivals, µs.
	GeneratorLagP99us float64 `json:"generator_lag_p99_us"`
	// Round trips to Redis per decision; 0 for the generator.
	RedisCallsPerDecision float64 `json:"redis_calls_per_decision"`
	// Decisions that admitted the request.
	Admitted int64 `json:"admitted"`
	// Decisions by source name; empty for the generator.
	Sources map[string]int64 `json:"sources"`
	// Decisions that returned an error.
	Errors int64 `json:"errors"`
	// CPU time of the bench process over the step, µs per decision (the
	// generator's included).
	ClientCPUus float64 `json:"client_cpu_us_per_decision"`
	// CPU time of the nodes over the step, µs per decision; null on
	// miniredis and for the generator.
	RedisCPUus *float64 `json:"redis_cpu_us_per_decision"`
	// "" when the step kept up, else what limited it: "system" or
	// "generator"; a system's sweep ends at the first step that has one.
	LimitedBy string `json:"limited_by"`
	// Why: "calls returned at 71% of the arrival rate"; with LimitedBy
	// "", that the generator fell behind, or "".
	Reason string `json:"reason"`

	overflow bool // the queue of arrivals filled up
	behind   bool // the generator fell behind its schedule (see judge)
}

// second is one row of a fault timeline (-fault).
type second struct {
	// "second".
	Type string `json:"type"`
	// The -fault given.
	Fault string `json:"fault"`
	// Start of the row, seconds since the load began.
	T float64 `json:"t_s"`
	// Width of a row (-interval), seconds.
	Interval float64 `json:"interval_s"`
	// Decisions made in the row.
	Decisions int64 `json:"decisions"`
	// Decisions / the row's width (the last row may be cut short).
	DecisionsPerSec float64 `json:"decisions_per_sec"`
	// Decisions in the row by source name.
	Sources map[string]int64 `json:"sources"`
	// Decisions in the row that returned an error.
	Errors int64 `json:"errors"`
	// p99 latency in the row (every 8th call), µs.
	P99us float64 `json:"p99_us"`
	// Most instances seen in the row with the victim's breaker open or
	// half-open.
	Degraded int `json:"degraded_instances"`
	// Times the victim's breaker opened in the row, summed over
	// instances (exact: Stats().Nodes[].Opened).
	Opened int64 `json:"breaker_opened"`
	// Times it was seen closed again: not closed at one sample (every
	// 20 ms and at each row's start), closed at the next.
	Closed int64 `json:"breaker_closed"`
	// Decisions in the row for the victim's keys, and those by source
	// name.
	VictimDecisions int64            `json:"victim_decisions"`
	VictimSources   map[string]int64 `json:"victim_sources"`
	// Those answered by the failure mode (fallback, fail-open or
	// fail-closed), and their share in %: 0 when there were none.
	VictimFailed    int64   `json:"victim_failure_mode"`
	VictimFailedPct float64 `json:"victim_failure_pct"`
	// The failure mode's answers for the victim's keys in the row by
	// hybrid.Reason name ("breaker-open", "timeout", ...), summed over
	// instances from Stats().Nodes[].Undecided.
	VictimReasons map[string]int64 `json:"victim_reasons"`
	// p99 latency of the answers from Redis for the victim's keys and
	// for the other nodes' keys in the row, µs; 0: none.
	VictimP99us float64 `json:"victim_remote_p99_us"`
	OthersP99us float64 `json:"others_remote_p99_us"`
	// What the injector did in the row ("kill 127.0.0.1:40001", "down",
	// "up"); may be empty.
	Events []string `json:"events"`
}

// faultSummary is the last line of a fault timeline.
type faultSummary struct {
	// "fault".
	Type string `json:"type"`
	// The -fault given.
	Fault string `json:"fault"`
	// The victim's address.
	Node string `json:"node"`
	// "redis-server 7.0.15" or "miniredis".
	Nodes string `json:"nodes"`
	// The hot keys the victim owns ("hot:3").
	HotKeys []string `json:"hot_keys"`
	// hybrid.Limiter instances and goroutines.
	Instances   int `json:"instances"`
	Concurrency int `json:"concurrency"`
	// Wall time of the run.
	Seconds float64 `json:"seconds"`
	// When the fault was injected, seconds since the load began.
	FaultAt float64 `json:"fault_at_s"`
	// When the node answered again (resumed, restarted, fast again, the
	// path up for good, the replica promoted, the slots moved); null for
	// kill.
	BackAt *float64 `json:"back_at_s"`
	// slow: the mean delay added to each reply, ms; null otherwise.
	SlowMs *float64 `json:"slow_ms"`
	// flap: how many times the path went down; 0 otherwise.
	Flaps int `json:"flaps"`
	// From the fault until every instance had the breaker open or
	// half-open; null if that never happened.
	DegradedMs *float64 `json:"degraded_after_ms"`
	// From BackAt until no instance had it open any more, for the rest
	// of the run; null for kill and failover or if not within the run.
	RecoveredMs *float64 `json:"recovered_after_ms"`
	// failover, from the kill: until the replica reported role:master;
	// until the first answer from Redis for the master's keys to a call
	// made after the kill; until the last failure-mode answer for them;
	// until redis_rate's first success on a key of the master. null for
	// the other faults or if not within the run.
	PromotedMs    *float64 `json:"promoted_after_ms"`
	RemoteMs      *float64 `json:"remote_after_ms"`
	LastFailureMs *float64 `json:"last_failure_after_ms"`
	RedisRateMs   *float64 `json:"redis_rate_after_ms"`
	// reshard, scale-out: how long the slots moved (rebalance alone for
	// scale-out); null for the other faults or if the move outlasted the
	// run.
	MoveSeconds *float64 `json:"move_s"`
	// reshard, scale-out: redis_rate's calls started while the slots
	// moved, those that failed, their p99 (µs), the slowest (ms) and the
	// last error (""); zero for the other faults.
	RedisRateCalls     int64   `json:"redis_rate_calls"`
	RedisRateErrors    int64   `json:"redis_rate_errors"`
	RedisRateP99us     float64 `json:"redis_rate_p99_us"`
	RedisRateSlowestMs float64 `json:"redis_rate_slowest_ms"`
	RedisRateLastError string  `json:"redis_rate_last_error"`
	// Times the victim's breaker opened in the run, over instances.
	Opened int64 `json:"breaker_opened"`
	// Decisions made in the run, and those that returned an error (0).
	Decisions int64 `json:"decisions"`
	Errors    int64 `json:"errors"`
	// Decisions by source name.
	Sources map[string]int64 `json:"sources"`
	// Decisions for the victim's keys, and those answered by the failure
	// mode.
	VictimDecisions int64 `json:"victim_decisions"`
	VictimFailed    int64 `json:"victim_failure_mode"`
	// % of the victim's decisions answered by the failure mode in the
	// rows from the fault's to the one before the node's return (to the
	// end for kill), and the p99 of its answers from Redis there, µs (0:
	// none).
	FaultVictimPct   float64 `json:"fault_victim_failure_pct"`
	FaultVictimP99us float64 `json:"fault_victim_remote_p99_us"`
}
