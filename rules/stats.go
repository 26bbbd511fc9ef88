package rules

// Stats is a snapshot of a middleware's counters (httplimit.Middleware's
// or grpclimit.Interceptor's Stats).
type Stats struct {
	// Reloads counts the rule sets put in force after New, by SetRules
	// or Watch; ReloadErrors those refused as invalid (a rules file that
	// does not parse or validate, or a SetRules error). A file that is
	// missing is logged but not counted.
	Reloads, ReloadErrors int64
	// Rules has one entry per rule in force, in order, Default last.
	// Counts of a rule are kept across reloads for as long as its name is.
	Rules []RuleStats
}

// RuleStats counts one rule's decisions by outcome: one per HTTP request
// or gRPC call, and one per message of a grpclimit PerMessage rule's
// streams.
type RuleStats struct {
	// Name and Shadow are the rule's.
	Name   string
	Shadow bool
	// Allowed: passed at once. Delayed: passed after a LeakyBucket
	// delay, or, on a gRPC client, after waiting for admission. Denied:
	// refused (HTTP 429, gRPC ResourceExhausted), or, on gRPC, ended
	// (cancelled, past its deadline) while held or waiting.
	// ShadowDenied: denied by a shadow rule, and passed. Errors: the
	// Limiter returned an error (only after its Close), and the request
	// passed.
	Allowed, Delayed, Denied, ShadowDenied, Errors int64
}
