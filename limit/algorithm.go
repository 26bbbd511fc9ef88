package limit

import "strconv"

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

	numAlgorithms
)

var algorithmNames = [...]string{"TokenBucket", "LeakyBucket", "FixedWindow", "SlidingWindowLog", "SlidingWindowCounter"}

// codes are the short names used in Redis keys.
var algorithmCodes = [...]string{"tb", "lb", "fw", "swl", "swc"}

// String returns the algorithm's Go name, for example "TokenBucket".
func (a Algorithm) String() string {
	if a < numAlgorithms {
		return algorithmNames[a]
	}
	return "Algorithm(" + strconv.Itoa(int(a)) + ")"
}

// Code returns the short name used in storage keys: "tb", "lb", "fw", "swl"
// or "swc". It is empty for an unknown algorithm.
func (a Algorithm) Code() string {
	if a < numAlgorithms {
		return algorithmCodes[a]
	}
	return ""
}

// Valid reports whether a is one of the five algorithms.
func (a Algorithm) Valid() bool { return a < numAlgorithms }

// isBucket reports whether the algorithm has a Burst distinct from its Rate.
func (a Algorithm) isBucket() bool { return a == TokenBucket || a == LeakyBucket }
