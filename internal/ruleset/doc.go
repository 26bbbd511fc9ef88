// Package ruleset is what httplimit and grpclimit share of their rules:
// the rule and its validation, the rules file (YAML) and its reload, the
// choice of the rule that decides a request among generic, tiered and
// default rules, the decision itself (a LeakyBucket held up to its
// MaxDelay, given back when refused), the rate-limit fields' values and
// the counters.
//
// What differs between the two is a Dialect: how a pattern (an HTTP route,
// a gRPC method) is checked and matched, and the names in messages. Each
// middleware keeps its public types (Rule, RuleSet, Stats) and converts
// them to this package's field by field, so that their documentation stays
// theirs.
package ruleset
