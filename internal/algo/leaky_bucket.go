package algo

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
