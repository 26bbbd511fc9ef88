package algo_test

import (
	"fmt"
	"time"

	"github.com/hybridlimit/hybridlimit/internal/algo"
	"github.com/hybridlimit/hybridlimit/internal/limitspec"
	"github.com/hybridlimit/hybridlimit/limit"
)

// take is limit.Take on a State the test can look into: the transition of
// one limit, after the checks limit.Take makes.
func take(s algo.State, l limit.Limit, now time.Time, cost int64) (algo.State, limit.Decision, error) {
	sp, err := limitspec.Of(l)
	if err != nil {
		return s, limit.Decision{}, err
	}
	if err := l.CheckCost(cost); err != nil {
		return s, limit.Decision{}, err
	}
	var d limit.Decision
	sp.TakeTo(limitspec.Decision(&d), &s, now.UnixMicro(), cost)
	return s, d, nil
}

// takeAll is limit.TakeAll on States the test can look into.
func takeAll(states []algo.State, limits []limit.Limit, now time.Time, cost int64) (limit.Decision, int, error) {
	if len(states) != len(limits) || len(limits) == 0 {
		return limit.Decision{}, 0, fmt.Errorf("%w: %d states for %d limits", limit.ErrInvalidLimit, len(states), len(limits))
	}
	if err := limit.CheckDistinct(limits); err != nil {
		return limit.Decision{}, 0, err
	}
	specs := make([]algo.Spec, len(limits))
	for i, l := range limits {
		sp, err := limitspec.Of(l)
		if err != nil {
			return limit.Decision{}, 0, err
		}
		if err := l.CheckCost(cost); err != nil {
			return limit.Decision{}, 0, err
		}
		specs[i] = sp
	}
	ptrs := make([]*algo.State, len(states))
	for i := range states {
		ptrs[i] = &states[i]
	}
	var d limit.Decision
	b := algo.TakeSpecsTo(limitspec.Decision(&d), ptrs, specs, now.UnixMicro(), cost)
	return d, b, nil
}

// leaseSpecs is algo.LeaseSpecs with a limit.Decision.
func leaseSpecs(states []*algo.State, specs []algo.Spec, nowUS, want int64) (int64, limit.Decision, int) {
	g, d, b := algo.LeaseSpecs(states, specs, nowUS, want)
	return g, limit.Decision(d), b
}
