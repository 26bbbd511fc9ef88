package grpclimit

import "errors"

var (
	// ErrInvalidConfig reports a Config that New cannot use: a nil
	// Limiter, a malformed trusted proxy, a prefix length out of range.
	ErrInvalidConfig = errors.New("grpclimit: invalid config")
	// ErrInvalidRules reports a rule set that cannot be enforced: a
	// missing or repeated name, a malformed or repeated method, an invalid
	// limit, an unknown field in a rules file. The message names the rule
	// and what is wrong with it.
	ErrInvalidRules = errors.New("grpclimit: invalid rules")
)
