package algo

import "strconv"

// ID numbers an algorithm: the values of limit.Algorithm, and the algorithm
// argument of the Lua scripts (ALG in remote/scripts/common.lua).
type ID uint8

// The algorithms, in the order of limit.Algorithm.
const (
	TokenBucket ID = iota
	LeakyBucket
	FixedWindow
	SlidingWindowLog
	SlidingWindowCounter

	// numIDs is the number of algorithms: one more than the last.
	numIDs
)

// algorithms holds each algorithm's names, by ID. Each is defined in the
// algorithm's own file, with its transitions (see dispatch.go).
var algorithms = [numIDs]*algorithm{
	TokenBucket:          &tokenBucket,
	LeakyBucket:          &leakyBucket,
	FixedWindow:          &fixedWindow,
	SlidingWindowLog:     &slidingWindowLog,
	SlidingWindowCounter: &slidingWindowCounter,
}

// Valid reports whether a is one of the algorithms.
func (a ID) Valid() bool { return a < numIDs }

// String returns the algorithm's Go name, for example "TokenBucket", or
// "Algorithm(9)" for an unknown one.
func (a ID) String() string {
	if a < numIDs {
		return algorithms[a].name
	}
	return "Algorithm(" + strconv.Itoa(int(a)) + ")"
}

// Code returns the short name package remote uses in Redis keys: "tb",
// "lb", "fw", "swl" or "swc". It is empty for an unknown algorithm.
func (a ID) Code() string {
	if a < numIDs {
		return algorithms[a].code
	}
	return ""
}

// Bucket reports whether the algorithm takes a Burst distinct from its Rate
// (TokenBucket and LeakyBucket).
func (a ID) Bucket() bool { return a < numIDs && algorithms[a].bucket }
