package algo

import "time"

// LeakyBucket (shaping): the token bucket's state read as a queue of work
// draining at the rate. An admitted request waits for the work ahead of it
// (remote/scripts/leaky_bucket.lua).
var leakyBucket = algorithm{
	name:   "LeakyBucket",
	code:   "lb",
	bucket: true,
}

func leakyDecide(v *view, dec *Decision, cost int64, allowed bool) {
	bucketDecide(v, dec, cost, allowed)
	if allowed {
		dec.Delay = us(v.after(v.nq + ceilDiv(v.d, v.sp.R)))
	}
}

// LongestDelay returns the longest Delay sp's limit gives an admitted
// request: for a LeakyBucket, that of a request of one unit that finds the
// queue holding C-1 units at the start of a quantum (a request of n units
// finds at most C-n ahead of it, and a later instant in the quantum waits
// less); 0 for the other algorithms, which delay nothing. It is leakyDecide
// on that queue.
func (sp *Spec) LongestDelay() time.Duration {
	if sp.Algorithm != LeakyBucket {
		return 0
	}
	v := view{sp: *sp, d: (sp.C - 1) * sp.P} // at the epoch: now, nq and at are 0
	var dec Decision
	leakyDecide(&v, &dec, 1, true)
	return dec.Delay
}
