package limit

import (
	"fmt"
	"time"

	"github.com/hybridlimit/hybridlimit/internal/algo"
)

// Take decides one request of cost units against l at now and returns the
// new state: the pure transition (state, limit, now, cost) -> (state,
// decision). A denied request charges nothing: it returns s unchanged, or,
// when s lies further in the future of now than a forward clock can explain,
// s rebased to now (see the package documentation), which a store must keep.
// Bad input returns an error wrapping ErrInvalidLimit, ErrInvalidCost or
// ErrCostExceedsLimit and s unchanged.
func Take(s State, l Limit, now time.Time, cost int64) (State, Decision, error) {
	if err := l.Validate(); err != nil {
		return s, Decision{}, err
	}
	if err := l.CheckCost(cost); err != nil {
		return s, Decision{}, err
	}
	sp, _ := l.spec()
	var d Decision
	sp.TakeTo(algoDecision(&d), &s.s, now.UnixMicro(), cost)
	return s, d, nil
}

// TakeAll decides one request of cost units against several limits of one
// key at once, all or nothing: when any limit denies, nothing is charged
// (a state ahead of now may still be rebased to now, as by Take). The
// Decision is that of the binding limit, whose index is returned: when denied,
// the denying limit with the longest RetryAfter; when allowed, the one with
// the fewest Remaining. Delay is the longest of all the limits' delays.
// states[i] belongs to limits[i].
func TakeAll(states []State, limits []Limit, now time.Time, cost int64) (Decision, int, error) {
	if len(states) != len(limits) || len(limits) == 0 {
		return Decision{}, 0, fmt.Errorf("%w: %d states for %d limits", ErrInvalidLimit, len(states), len(limits))
	}
	if err := CheckDistinct(limits); err != nil {
		return Decision{}, 0, err
	}
	specs := make([]algo.Spec, len(limits))
	for i, l := range limits {
		if err := l.Validate(); err != nil {
			return Decision{}, 0, err
		}
		if err := l.CheckCost(cost); err != nil {
			return Decision{}, 0, err
		}
		specs[i], _ = l.spec()
	}
	ptrs := make([]*algo.State, len(states))
	for i := range states {
		ptrs[i] = &states[i].s
	}
	var d Decision
	b := algo.TakeSpecsTo(algoDecision(&d), ptrs, specs, now.UnixMicro(), cost)
	return d, b, nil
}
