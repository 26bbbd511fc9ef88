package limit

import "github.com/hybridlimit/hybridlimit/internal/algo"

// Algorithm selects how a Limit is enforced. The zero value is TokenBucket.
type Algorithm uint8

const (
	// TokenBucket allows bursts of up to Burst units and refills
	// continuously at Rate per Period.
	TokenBucket Algorithm = iota
	// LeakyBucket shapes traffic: admitted requests are given a Delay so
	// that the output never exceeds Rate per Period; a full queue denies.
	LeakyBucket
	// FixedWindow counts units in windows aligned to Unix time.
	FixedWindow
	// SlidingWindowLog records every unit and counts those in the last
	// Period exactly. Its memory grows with Rate (at most MaxLogRate).
	SlidingWindowLog
	// SlidingWindowCounter weights the previous window's count by the part
	// of it still inside the sliding window.
	SlidingWindowCounter
)

// String returns the algorithm's Go name, for example "TokenBucket".
func (a Algorithm) String() string { return algo.ID(a).String() }

// Valid reports whether a is one of the five algorithms.
func (a Algorithm) Valid() bool { return algo.ID(a).Valid() }

// isBucket reports whether the algorithm has a Burst distinct from its Rate.
func (a Algorithm) isBucket() bool { return algo.ID(a).Bucket() }
