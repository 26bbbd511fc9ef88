package algo

import "time"

// TakeTo decides cost units against one limit at nowUS (microseconds since
// the Unix epoch), charging s when allowed, and writes the Decision to *d.
// It assumes 1 <= cost <= C. A denied request charges nothing, though a
// state further ahead of nowUS than a forward clock can explain is rebased
// to nowUS (see "Clocks that step" in package limit), which a store must
// keep.
//
// The Decision is written in place, for a store's hot path: a Decision has
// five fields, more than the compiler keeps in registers, so a Decision
// returned through several calls is copied through memory at each, and the
// copies read fields just written (a stall of several nanoseconds each);
// written once in the caller's variable, it is not copied.
//
// A token bucket counted in microseconds whose clock is not behind its last
// charge, the most common decision, takes a short path (takeTokens) before
// any dispatch: see BenchmarkTakeTo.
func (sp *Spec) TakeTo(d *Decision, s *State, nowUS, cost int64) {
	if sp.Algorithm == TokenBucket && sp.Q == 1 && nowUS >= s.T && s.T > 0 {
		sp.takeTokens(d, s, nowUS, cost)
		return
	}
	var v view
	v.look(sp, s, nowUS)
	ok := v.allows(cost)
	if ok {
		v.commit(s, cost)
	}
	v.decide(d, cost, ok)
}

// maxViews is how many limits of one request are viewed in an array on the
// stack; more are viewed in a slice allocated for the request. Most requests
// carry a few limits.
const maxViews = 8

// TakeSpecsTo decides cost units against several limits of one key at once,
// all or nothing: when any limit denies, nothing is charged (a state ahead
// of now may still be rebased, as by TakeTo). It writes the binding limit's
// Decision to *d and returns its index: when denied, the denying limit with
// the longest RetryAfter; when allowed, the one with the fewest Remaining.
// Delay is the longest of all the limits' delays. states[i] belongs to
// specs[i]. It assumes 1 <= cost <= every capacity and len(states) ==
// len(specs) >= 1.
func TakeSpecsTo(d *Decision, states []*State, specs []Spec, nowUS, cost int64) int {
	if len(specs) == 1 {
		specs[0].TakeTo(d, states[0], nowUS, cost)
		return 0
	}
	var buf [maxViews]view
	views := lookAll(&buf, states, specs, nowUS)
	ok := allowAll(views, cost)
	if ok {
		for i := range views {
			views[i].commit(states[i], cost)
		}
	}
	return bind(d, views, cost, ok)
}

// bind writes the binding limit's decision to out and returns its index.
func bind(out *Decision, views []view, cost int64, allowed bool) int {
	// Each candidate is decided into one of two places, and the best so far
	// is kept in the other: no Decision is copied in the loop.
	var cand [2]Decision
	cur, best := 0, -1
	var delay time.Duration
	for i := range views {
		ok := allowed
		if !allowed {
			ok = views[i].allows(cost)
			if ok {
				continue // not a reason for the denial
			}
		}
		d, b := &cand[cur], &cand[cur^1]
		views[i].decide(d, cost, ok)
		delay = max(delay, d.Delay)
		if best < 0 ||
			(!allowed && d.RetryAfter > b.RetryAfter) ||
			(allowed && d.Remaining < b.Remaining) {
			best, cur = i, cur^1
		}
	}
	*out = cand[cur^1]
	out.Delay = delay
	return best
}

// LeaseSpecs takes up to want units from all the limits at once, as many as
// every one of them admits now, and charges them. It returns the units
// granted (0 when any limit is exhausted; nothing is charged then, though a
// state ahead of now may be rebased, as by TakeTo) and the binding decision
// after the charge, and the binding limit's index.
func LeaseSpecs(states []*State, specs []Spec, nowUS, want int64) (int64, Decision, int) {
	var buf [maxViews]view
	views := lookAll(&buf, states, specs, nowUS)
	g := want
	for i := range views {
		g = min(g, views[i].avail())
	}
	var d Decision
	if g < 1 {
		b := bind(&d, views, 1, false)
		return 0, d, b
	}
	for i := range views {
		views[i].commit(states[i], g)
	}
	b := bind(&d, views, g, true)
	return g, d, b
}

// PeekSpecs writes to *d what TakeSpecsTo would decide for cost units now,
// and returns the binding limit's index, charging nothing (a state ahead of
// now may be rebased, as by TakeTo). It assumes 1 <= cost <= every
// capacity.
func PeekSpecs(d *Decision, states []*State, specs []Spec, nowUS, cost int64) int {
	var buf [maxViews]view
	views := lookAll(&buf, states, specs, nowUS)
	ok := allowAll(views, cost)
	return bind(d, views, cost, ok)
}

// GiveBackSpecs returns units leased at leaseUS to all the limits, never
// above their capacity: buckets get the units back; a window gets them back
// only while the lease's window is still counted; the log removes that many
// of the oldest events in the window charged at or after leaseUS. A state
// rebased to now because the clock went back (see TakeTo) has moved its
// count to now's window, or its events to now: a lease taken before the
// step returns nothing unless its own time lies in now's window (see
// "Clocks that step" in package limit).
func GiveBackSpecs(states []*State, specs []Spec, nowUS, leaseUS, units int64) {
	if units < 1 {
		return
	}
	for i := range specs {
		var v view
		v.look(&specs[i], states[i], nowUS)
		v.giveBack(states[i], leaseUS, units)
	}
}

// RefundSpecs gives units back to every limit now, never above its
// capacity: buckets get them back; a window from its current count (a
// SlidingWindowCounter from the previous window's once the current one's
// is spent); the log loses its newest events.
func RefundSpecs(states []*State, specs []Spec, nowUS, units int64) {
	if units < 1 {
		return
	}
	for i := range specs {
		var v view
		v.look(&specs[i], states[i], nowUS)
		v.refund(states[i], units)
	}
}

// lookAll looks at every limit's state at nowUS, in buf when the limits fit
// (the caller's stack: most requests carry a few).
func lookAll(buf *[maxViews]view, states []*State, specs []Spec, nowUS int64) []view {
	views := buf[:]
	if len(specs) > len(buf) {
		views = make([]view, len(specs))
	}
	views = views[:len(specs)]
	for i := range specs {
		views[i].look(&specs[i], states[i], nowUS)
	}
	return views
}

// allowAll reports whether every view allows cost.
func allowAll(views []view, cost int64) bool {
	for i := range views {
		if !views[i].allows(cost) {
			return false
		}
	}
	return true
}
