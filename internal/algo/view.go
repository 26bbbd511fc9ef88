package algo

// algorithm is what package limit and package remote know of an algorithm
// by its ID, defined in the algorithm's file.
type algorithm struct {
	name   string // the Go name: "TokenBucket"
	code   string // the short name in Redis keys: "tb"
	bucket bool   // takes a Burst distinct from its Rate
}

// view is one limit's state seen at one instant, before any charge: the
// union of what the algorithms read (the Lua scripts' v table). All
// arithmetic is in int64 and stays below 2^53, as the Lua mirror requires.
type view struct {
	sp   Spec
	at   int64 // the request's instant in microseconds: durations count from it
	now  int64 // effective now in microseconds (a window ahead of at counts as at its time)
	nq   int64 // now in quanta
	d    int64 // buckets: deficit/queue now (scaled by P); windows: count in now's window
	prev int64 // SlidingWindowCounter: count of the previous window
	k    int64 // window index (FixedWindow, SlidingWindowCounter)
	head int   // SlidingWindowLog: first live event in Log
	n    int64 // SlidingWindowLog: live units
	log  []Event
}

// after is the time in microseconds from the request's instant until
// quantum tq: from now, even when the state is ahead of it.
func (v *view) after(tq int64) int64 { return max(tq*v.sp.Q-v.at, 0) }
