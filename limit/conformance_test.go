package limit_test

import (
	"testing"
	"time"

	"github.com/hybridlimit/hybridlimit/internal/conformance"
	"github.com/hybridlimit/hybridlimit/limit"
)

// TestConformance plays the shared vectors against the pure transitions.
func TestConformance(t *testing.T) {
	states := map[string][]limit.State{}
	conformance.Run(t, 0, func(t *testing.T, key string, limits []limit.Limit, now time.Time, cost int64) (limit.Decision, int, error) {
		st, ok := states[key]
		if !ok {
			st = make([]limit.State, len(limits))
			states[key] = st
		}
		if len(limits) == 1 {
			next, d, err := limit.Take(st[0], limits[0], now, cost)
			st[0] = next
			return d, 0, err
		}
		return limit.TakeAll(st, limits, now, cost)
	})
}
