package limit

import "github.com/hybridlimit/hybridlimit/internal/algo"

// State is the state of one limit for one key, for [Take] and [TakeAll].
// The zero State is a key never seen (a full bucket, an empty window).
//
// Its contents are not part of the API: they depend on the algorithm and
// on the integer form of the limit, which may change. A State is a value:
// a transition returns a new one. For SlidingWindowLog the new State may
// reuse the event storage of the old one, as append does, so keep only the
// returned State.
type State struct {
	s algo.State
}
