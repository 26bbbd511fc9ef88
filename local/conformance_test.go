package local

import (
	"testing"
	"time"

	"github.com/hybridlimit/hybridlimit/internal/testkit/conformance"
	"github.com/hybridlimit/hybridlimit/limit"
)

// TestConformance plays the shared vectors against a Limiter, exactly: every
// vector runs on its own key of one fresh Limiter.
func TestConformance(t *testing.T) {
	l, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	conformance.Run(t, 0, func(t *testing.T, key string, limits []limit.Limit, now time.Time, cost int64) (limit.Decision, int, error) {
		return l.AllowAt(key, now, cost, limits...)
	})
}

// TestConformanceSmall plays them again on a Limiter that holds only a few
// entries, in one shard: eviction must never take the state of the key a
// request is deciding.
func TestConformanceSmall(t *testing.T) {
	l, err := New(Config{MaxKeys: 2})
	if err != nil {
		t.Fatal(err)
	}
	conformance.Run(t, 0, func(t *testing.T, key string, limits []limit.Limit, now time.Time, cost int64) (limit.Decision, int, error) {
		return l.AllowAt(key, now, cost, limits...)
	})
}
