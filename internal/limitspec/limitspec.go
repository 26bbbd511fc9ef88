// Package limitspec turns a limit.Limit into its integer form, an
// algo.Spec, for the stores (package local, package remote) and their
// tests. It is the one bridge between the public vocabulary and the
// representation: package algo imports nothing of the module, because
// package limit's pure decision is built on it, and package limit exports
// no internal type.
package limitspec

import (
	"github.com/hybridlimit/hybridlimit/internal/algo"
	"github.com/hybridlimit/hybridlimit/limit"
)

// Of validates l and returns its Spec. The error is that of l.Validate.
func Of(l limit.Limit) (algo.Spec, error) {
	if err := l.Validate(); err != nil {
		return algo.Spec{}, err
	}
	return Valid(l), nil
}

// Valid returns the Spec of l, which must be valid (l.Validate returned
// nil): a store that has validated a request's limits builds their Specs
// with it.
func Valid(l limit.Limit) algo.Spec {
	sp, _ := algo.New(algo.ID(l.Algorithm), l.Rate, l.Period.Microseconds(), l.Capacity(), l.Name != "")
	return sp
}

// Matches reports whether sp, the Spec of a limit, is the Spec of l: that
// is, whether l is valid and has the canonical form of that limit (see
// algo.Spec.Matches). It costs a few comparisons.
func Matches(sp *algo.Spec, l *limit.Limit) bool {
	return sp.Matches(algo.ID(l.Algorithm), l.Rate, l.Period, l.Burst, l.Name != "")
}

// Decision is d as the transitions write it: limit.Decision and
// algo.Decision have one underlying type, so the conversion is free.
func Decision(d *limit.Decision) *algo.Decision { return (*algo.Decision)(d) }
