package remote

import (
	"context"
	"testing"
	"time"

	"github.com/hybridlimit/hybridlimit/internal/testkit/conformance"
	"github.com/hybridlimit/hybridlimit/limit"
)

func runConformance(t *testing.T, s *Store, c clock, tol time.Duration) {
	conformance.Run(t, tol, func(t *testing.T, key string, limits []limit.Limit, now time.Time, cost int64) (limit.Decision, int, error) {
		c.set(t, now)
		return s.decide(context.Background(), key, cost, limits...)
	})
}

// TestConformanceMiniredis plays the shared vectors against the production
// scripts on miniredis, its clock set by SetTime.
func TestConformanceMiniredis(t *testing.T) {
	for _, lt := range layouts {
		t.Run(lt.name, func(t *testing.T) {
			s, _, c := newMiniIn(t, lt.l)
			runConformance(t, s, c, conformance.Tolerance)
		})
	}
}

// TestConformanceRedis plays the shared vectors against real redis-server,
// the oracle where miniredis's Lua differs, with the code run as the
// function library and as scripts.
func TestConformanceRedis(t *testing.T) {
	for _, lt := range layouts {
		for _, m := range realModes {
			t.Run(lt.name+"/"+m.name, func(t *testing.T) {
				s, _, c := newRealModeIn(t, m.fn, lt.l)
				runConformance(t, s, c, conformance.Tolerance)
			})
		}
	}
}
