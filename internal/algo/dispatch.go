package algo

// The transitions of each algorithm are the functions of its file, named as
// the Lua tables name them (remote/scripts/*.lua: look, avail, allows,
// decide, commit, giveback, refund): bucketLook, fixedDecide, logRefund...
// The functions below route each operation to the algorithm's function
// and hold no arithmetic of their own; the generic code (take.go,
// convert.go) calls only them.
//
// The routing is a switch per operation, not a table of functions or an
// interface: a call through a function value or an interface is opaque to
// escape analysis, which then moves every view, State and Decision passed
// to it to the heap (one to four allocations per decision in package local's
// TestZeroAllocs). Adding an algorithm adds a case to each switch here, which
// TestDispatchEveryAlgorithm checks; a missing case panics.

// look sets v to the view of s at nowUS: what the algorithm's state means at
// that instant, before any charge. A state that lies in the future of nowUS
// by more than a clock going forward can explain (it was stepped back) is
// rebased to nowUS, in s itself: see "Clocks that step" in package limit's
// documentation. Nothing is charged by that.
func (v *view) look(sp *Spec, s *State, nowUS int64) {
	if nowUS < 1 {
		nowUS = 1 // T == 0 means never charged; the epoch itself counts as 1µs after it
	}
	*v = view{sp: *sp, at: nowUS, now: nowUS}
	switch sp.Algorithm {
	case TokenBucket, LeakyBucket:
		bucketLook(v, sp, s, nowUS)
	case FixedWindow:
		fixedLook(v, sp, s, nowUS)
	case SlidingWindowCounter:
		counterLook(v, sp, s, nowUS)
	case SlidingWindowLog:
		logLook(v, sp, s, nowUS)
	default:
		panic(unknown(sp.Algorithm))
	}
}

// avail is how many units the limit admits at the view's instant.
func (v *view) avail() int64 {
	var a int64
	switch v.sp.Algorithm {
	case TokenBucket, LeakyBucket:
		a = bucketAvail(v)
	case FixedWindow:
		a = fixedAvail(v)
	case SlidingWindowCounter:
		a = counterAvail(v)
	case SlidingWindowLog:
		a = logAvail(v)
	default:
		panic(unknown(v.sp.Algorithm))
	}
	return max(a, 0)
}

// allows reports whether cost fits, exactly (no rounding of an estimate).
func (v *view) allows(cost int64) bool {
	switch v.sp.Algorithm {
	case TokenBucket, LeakyBucket:
		return bucketAllows(v, cost)
	case FixedWindow:
		return fixedAllows(v, cost)
	case SlidingWindowCounter:
		return counterAllows(v, cost)
	case SlidingWindowLog:
		return logAllows(v, cost)
	}
	panic(unknown(v.sp.Algorithm))
}

// decide writes to dec the decision for cost: the figures after the charge
// when allowed, the current ones with RetryAfter when not. Written in place,
// not returned, for the reason Spec.TakeTo gives. The algorithm's decide
// finds dec zeroed but for Allowed.
func (v *view) decide(dec *Decision, cost int64, allowed bool) {
	*dec = Decision{Allowed: allowed}
	switch v.sp.Algorithm {
	case TokenBucket:
		bucketDecide(v, dec, cost, allowed)
	case LeakyBucket:
		leakyDecide(v, dec, cost, allowed)
	case FixedWindow:
		fixedDecide(v, dec, cost, allowed)
	case SlidingWindowCounter:
		counterDecide(v, dec, cost, allowed)
	case SlidingWindowLog:
		logDecide(v, dec, cost, allowed)
	default:
		panic(unknown(v.sp.Algorithm))
	}
}

// commit charges cost (which the view allows) to s.
func (v *view) commit(s *State, cost int64) {
	switch v.sp.Algorithm {
	case TokenBucket, LeakyBucket:
		bucketCommit(v, s, cost)
	case FixedWindow:
		fixedCommit(v, s, cost)
	case SlidingWindowCounter:
		counterCommit(v, s, cost)
	case SlidingWindowLog:
		logCommit(v, s, cost)
	default:
		panic(unknown(v.sp.Algorithm))
	}
}

// giveBack returns units leased at leaseUS to s (see GiveBackSpecs).
func (v *view) giveBack(s *State, leaseUS, units int64) {
	switch v.sp.Algorithm {
	case TokenBucket, LeakyBucket:
		bucketGiveBack(v, s, leaseUS, units)
	case FixedWindow:
		fixedGiveBack(v, s, leaseUS, units)
	case SlidingWindowCounter:
		counterGiveBack(v, s, leaseUS, units)
	case SlidingWindowLog:
		logGiveBack(v, s, leaseUS, units)
	default:
		panic(unknown(v.sp.Algorithm))
	}
}

// refund gives units back to s now (see RefundSpecs).
func (v *view) refund(s *State, units int64) {
	switch v.sp.Algorithm {
	case TokenBucket, LeakyBucket:
		bucketRefund(v, s, units)
	case FixedWindow:
		fixedRefund(v, s, units)
	case SlidingWindowCounter:
		counterRefund(v, s, units)
	case SlidingWindowLog:
		logRefund(v, s, units)
	default:
		panic(unknown(v.sp.Algorithm))
	}
}

// IdleAt returns the first instant, in microseconds since the Unix epoch,
// from which s decides every request as the zero State does, provided the
// clock does not go back before it; 0 when s is already that. A store may
// forget the state from then on. It is exact, not a bound:
// TestIdleAtMatchesFresh checks it. Each algorithm's idleAt says when.
func (sp *Spec) IdleAt(s *State) int64 {
	switch sp.Algorithm {
	case TokenBucket, LeakyBucket:
		return bucketIdleAt(sp, s)
	case FixedWindow:
		return fixedIdleAt(sp, s)
	case SlidingWindowCounter:
		return counterIdleAt(sp, s)
	case SlidingWindowLog:
		return logIdleAt(sp, s)
	}
	panic(unknown(sp.Algorithm))
}

// unknown is the panic of an operation on a Spec of no algorithm, which New
// never returns.
func unknown(a ID) string { return "algo: no transitions for " + a.String() }
