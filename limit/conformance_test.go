package limit_test

import (
	"testing"
	"time"

	"github.com/hybridlimit/hybridlimit/internal/testkit/conformance"
	"github.com/hybridlimit/hybridlimit/limit"
)

// stored is a limit's state as a store keeps it, with the limit it was
// written for.
type stored struct {
	lim   limit.Limit
	state limit.State
}

// storeID is what a store keys a limit's state by: the name and the
// algorithm of a named limit, the canonical form of any other.
func storeID(key string, l limit.Limit) any {
	type namedID struct {
		key, name string
		alg       limit.Algorithm
	}
	type unnamedID struct {
		key string
		lim limit.Limit
	}
	if l.Name != "" {
		return namedID{key, l.Name, l.Algorithm}
	}
	return unnamedID{key, l.Canonical()}
}

// TestConformance plays the shared vectors against the pure transitions,
// keeping states as a store does: a named limit's state converted
// (limit.Convert) when it meets another limit of its name.
func TestConformance(t *testing.T) {
	states := map[any]*stored{}
	conformance.Run(t, 0, func(t *testing.T, key string, limits []limit.Limit, now time.Time, cost int64) (limit.Decision, int, error) {
		for _, l := range limits {
			if err := l.Validate(); err != nil {
				return limit.Decision{}, 0, err
			}
		}
		if err := limit.CheckDistinct(limits); err != nil {
			return limit.Decision{}, 0, err
		}
		st := make([]limit.State, len(limits))
		for i, l := range limits {
			s, ok := states[storeID(key, l)]
			if !ok {
				continue
			}
			if s.lim.Canonical() != l.Canonical() {
				conv, err := limit.Convert(s.state, s.lim, l, now)
				if err != nil {
					t.Fatal(err)
				}
				s.lim, s.state = l, conv
			}
			st[i] = s.state
		}
		var d limit.Decision
		var b int
		var err error
		if len(limits) == 1 {
			st[0], d, err = limit.Take(st[0], limits[0], now, cost)
		} else {
			d, b, err = limit.TakeAll(st, limits, now, cost)
		}
		if err != nil {
			return d, b, err
		}
		for i, l := range limits {
			states[storeID(key, l)] = &stored{lim: l, state: st[i]}
		}
		return d, b, nil
	})
}
