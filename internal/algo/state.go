package algo

// State is the state of one limit for one key. The zero State is a key never
// seen (a full bucket, an empty window).
//
// The meaning of its fields depends on the algorithm. The transitions change
// it in place; for SlidingWindowLog they may reuse the event storage, as
// append does, so a copy that must stay as it was needs its own Log.
type State struct {
	// T is the time of the last charge, in microseconds since the Unix
	// epoch; 0 means never. The buckets and windows also set it to now
	// when they give units back or rebase a state ahead of now (A and B
	// are counted as of T), SlidingWindowLog when it rebases its events.
	T int64
	// A is, for TokenBucket, the deficit (capacity minus tokens) and, for
	// LeakyBucket, the queued work, both scaled by the period in quanta
	// (Spec.P); for FixedWindow and SlidingWindowCounter the count in T's
	// window; for SlidingWindowLog the units in Log (the sum of the
	// events' N).
	A int64
	// B is, for SlidingWindowCounter, the count in the window before T's.
	B int64
	// Log holds SlidingWindowLog's events, oldest first; events charged at
	// the same microsecond share one Event.
	Log []Event
}

// Event is N units charged by SlidingWindowLog at time T (microseconds since
// the Unix epoch).
type Event struct {
	T int64 // microseconds since the Unix epoch
	N int64 // units charged at T
}
