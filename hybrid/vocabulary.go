package hybrid

import (
	"github.com/hybridlimit/hybridlimit/limit"
	"github.com/hybridlimit/hybridlimit/remote"
)

// Layout is how a Limiter keeps its states in Redis (Config.Layout): the
// zero Layout gives each state a key of its own; Layout{Compact: true,
// Keys: n} packs them into hashes shared by about remote.KeysPerHash keys,
// sized for n keys deciding within a generation. See remote.Layout.
type Layout = remote.Layout

// Limit is a rate limit: Rate units per Period, enforced by Algorithm. See
// package limit for the exact semantics of each algorithm.
type Limit = limit.Limit

// Algorithm selects how a Limit is enforced; the zero value is TokenBucket.
type Algorithm = limit.Algorithm

// The five algorithms.
const (
	TokenBucket          = limit.TokenBucket
	LeakyBucket          = limit.LeakyBucket
	FixedWindow          = limit.FixedWindow
	SlidingWindowLog     = limit.SlidingWindowLog
	SlidingWindowCounter = limit.SlidingWindowCounter
)

// PerSecond returns a token bucket of n units per second with a burst of n.
func PerSecond(n int64) Limit { return limit.PerSecond(n) }

// PerMinute returns a token bucket of n units per minute with a burst of n.
func PerMinute(n int64) Limit { return limit.PerMinute(n) }

// PerHour returns a token bucket of n units per hour with a burst of n.
func PerHour(n int64) Limit { return limit.PerHour(n) }
