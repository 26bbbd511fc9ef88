package limit

import (
	"fmt"
	"math/bits"
	"time"
)

// commit charges cost (which the view allows) to s.
func (v *view) commit(s *State, cost int64) {
	sp := v.sp
	switch sp.Algorithm {
	case TokenBucket, LeakyBucket:
		s.T, s.A = v.now, v.d+cost*sp.P
	case FixedWindow:
		s.T, s.A = v.now, v.d+cost
	case SlidingWindowCounter:
		s.T, s.A, s.B = v.now, v.d+cost, v.prev
	case SlidingWindowLog:
		live := s.Log[v.head:]
		if n := len(live); n > 0 && live[n-1].T == v.now {
			live[n-1].N += cost
		} else {
			if len(s.Log) == cap(s.Log) && v.head > 0 {
				// Reuse the expired prefix instead of growing.
				live = s.Log[:copy(s.Log, live)]
			}
			live = append(live, Event{T: v.now, N: cost})
		}
		s.Log, s.A = live, v.n+cost
		s.T = v.now
	}
}

// Take decides one request of cost units against l at now and returns the
// new state: the pure transition (state, limit, now, cost) -> (state,
// decision). A denied request charges nothing: it returns s unchanged, or,
// when s lies further in the future of now than a forward clock can explain,
// s rebased to now (see the package documentation), which a store must keep.
// Bad input returns an error wrapping ErrInvalidLimit, ErrInvalidCost or
// ErrCostExceedsLimit and s unchanged.
func Take(s State, l Limit, now time.Time, cost int64) (State, Decision, error) {
	sp, err := l.Spec()
	if err != nil {
		return s, Decision{}, err
	}
	if err := l.CheckCost(cost); err != nil {
		return s, Decision{}, err
	}
	d := sp.Take(&s, now.UnixMicro(), cost)
	return s, d, nil
}

// Take decides cost units against one limit at nowUS (microseconds since the
// Unix epoch), charging s when allowed. It assumes 1 <= cost <= C.
func (sp Spec) Take(s *State, nowUS, cost int64) Decision {
	var d Decision
	sp.TakeTo(&d, s, nowUS, cost)
	return d
}

// TakeTo is Take writing the Decision to *d, for a store's hot path. A
// Decision has five fields, more than the compiler keeps in registers, so a
// Decision returned through several calls is copied through memory at each,
// and the copies read fields just written (a stall of several nanoseconds
// each); written once in the caller's variable, it is not copied.
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

// TakeAll decides one request of cost units against several limits of one
// key at once, all or nothing: when any limit denies, nothing is charged
// (a state ahead of now may still be rebased to now, as by Take). The
// Decision is that of the binding limit, whose index is returned: when denied,
// the denying limit with the longest RetryAfter; when allowed, the one with
// the fewest Remaining. Delay is the longest of all the limits' delays.
// states[i] belongs to limits[i].
func TakeAll(states []State, limits []Limit, now time.Time, cost int64) (Decision, int, error) {
	if len(states) != len(limits) || len(limits) == 0 {
		return Decision{}, 0, fmt.Errorf("%w: %d states for %d limits", ErrInvalidLimit, len(states), len(limits))
	}
	if err := CheckDistinct(limits); err != nil {
		return Decision{}, 0, err
	}
	specs := make([]Spec, len(limits))
	for i, l := range limits {
		sp, err := l.Spec()
		if err != nil {
			return Decision{}, 0, err
		}
		if err := l.CheckCost(cost); err != nil {
			return Decision{}, 0, err
		}
		specs[i] = sp
	}
	ptrs := make([]*State, len(states))
	for i := range states {
		ptrs[i] = &states[i]
	}
	d, b := TakeSpecs(ptrs, specs, now.UnixMicro(), cost)
	return d, b, nil
}

// TakeSpecs is TakeAll on validated specs, for stores that keep State
// themselves. It assumes 1 <= cost <= every capacity and len(states) ==
// len(specs) >= 1.
func TakeSpecs(states []*State, specs []Spec, nowUS, cost int64) (Decision, int) {
	var d Decision
	b := TakeSpecsTo(&d, states, specs, nowUS, cost)
	return d, b
}

// TakeSpecsTo is TakeSpecs writing the Decision to *d, for the reason
// Spec.TakeTo gives. It returns the binding limit's index.
func TakeSpecsTo(d *Decision, states []*State, specs []Spec, nowUS, cost int64) int {
	if len(specs) == 1 {
		specs[0].TakeTo(d, states[0], nowUS, cost)
		return 0
	}
	var buf [8]view // most requests carry a few limits
	views := buf[:]
	if len(specs) > len(buf) {
		views = make([]view, len(specs))
	}
	views = views[:len(specs)]
	ok := true
	for i := range specs {
		views[i].look(&specs[i], states[i], nowUS)
		ok = ok && views[i].allows(cost)
	}
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
// state ahead of now may be rebased, as by Take) and the binding decision
// after the charge, and the binding limit's index.
func LeaseSpecs(states []*State, specs []Spec, nowUS, want int64) (int64, Decision, int) {
	var buf [8]view // most requests carry a few limits
	views := buf[:]
	if len(specs) > len(buf) {
		views = make([]view, len(specs))
	}
	views = views[:len(specs)]
	g := want
	for i := range specs {
		views[i].look(&specs[i], states[i], nowUS)
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

// GiveBackSpecs returns units leased at leaseUS to all the limits, never
// above their capacity: buckets get the units back; a window gets them back
// only while the lease's window is still counted; the log removes that many
// of the oldest events in the window charged at or after leaseUS. A state
// rebased to now because the clock went back (see Take) has moved its count
// to now's window, or its events to now: a lease taken before the step
// returns nothing unless its own time lies in now's window (see "Clocks
// that step" in the package documentation).
func GiveBackSpecs(states []*State, specs []Spec, nowUS, leaseUS, units int64) {
	for i, sp := range specs {
		sp.giveBack(states[i], nowUS, leaseUS, units)
	}
}

func (sp Spec) giveBack(s *State, nowUS, leaseUS, units int64) {
	if units < 1 {
		return
	}
	var v view
	v.look(&sp, s, nowUS)
	switch sp.Algorithm {
	case TokenBucket, LeakyBucket:
		s.T, s.A = v.now, max(v.d-units*sp.P, 0)
	case FixedWindow:
		if floorDiv(leaseUS, sp.P) == v.k && v.d > 0 {
			s.T, s.A = v.now, max(v.d-units, 0)
		}
	case SlidingWindowCounter:
		lk := floorDiv(floorDiv(leaseUS, sp.Q), sp.P)
		switch {
		case lk == v.k && v.d > 0:
			s.T, s.A, s.B = v.now, max(v.d-units, 0), v.prev
		case lk == v.k-1 && v.prev > 0:
			s.T, s.A, s.B = v.now, v.d, max(v.prev-units, 0)
		}
	case SlidingWindowLog:
		// Remove the oldest events charged at or after the lease: the
		// lease's own unless the clock went backwards meanwhile.
		live := s.Log[:v.head]
		for _, ev := range s.Log[v.head:] {
			if ev.T >= leaseUS && units > 0 {
				n := min(ev.N, units)
				ev.N -= n
				s.A -= n
				units -= n
			}
			if ev.N > 0 {
				live = append(live, ev)
			}
		}
		s.Log = live
	}
}

// takeTokens is Take for the most common case, a token bucket counted in
// microseconds with a clock not behind its last charge: the same arithmetic
// as look, allows, commit and decide, without building a view.
func (sp *Spec) takeTokens(out *Decision, s *State, nowUS, cost int64) {
	d := int64(0)
	if s.A > 0 {
		if hi, lo := bits.Mul64(uint64(nowUS-s.T), uint64(sp.R)); hi == 0 && lo < uint64(s.A) {
			d = s.A - int64(lo)
		}
	}
	full, need := sp.C*sp.P, cost*sp.P
	if d+need > full {
		out.Allowed = false
		out.Remaining = max((full-d)/sp.P, 0)
		out.RetryAfter = us((d + need - full + sp.R - 1) / sp.R)
		out.ResetAfter = us((d + sp.R - 1) / sp.R)
		out.Delay = 0
		return
	}
	d += need
	s.T, s.A = nowUS, d
	// All operands are non-negative here: plain division floors, and
	// (a+b-1)/b rounds up.
	out.Allowed = true
	out.Remaining = (full - d) / sp.P
	out.RetryAfter = 0
	out.ResetAfter = us((d + sp.R - 1) / sp.R)
	out.Delay = 0
}

// PeekSpecs writes to *d what TakeSpecsTo would decide for cost units now,
// and returns the binding limit's index, charging nothing (a state ahead of
// now may be rebased, as by Take). It assumes 1 <= cost <= every capacity.
func PeekSpecs(d *Decision, states []*State, specs []Spec, nowUS, cost int64) int {
	var buf [8]view // most requests carry a few limits
	views := buf[:]
	if len(specs) > len(buf) {
		views = make([]view, len(specs))
	}
	views = views[:len(specs)]
	ok := true
	for i := range specs {
		views[i].look(&specs[i], states[i], nowUS)
		ok = ok && views[i].allows(cost)
	}
	return bind(d, views, cost, ok)
}

// RefundSpecs gives units back to every limit now, never above its
// capacity: buckets get them back; a window from its current count (a
// SlidingWindowCounter from the previous window's once the current one's
// is spent); the log loses its newest events.
func RefundSpecs(states []*State, specs []Spec, nowUS, units int64) {
	for i, sp := range specs {
		sp.refund(states[i], nowUS, units)
	}
}

func (sp Spec) refund(s *State, nowUS, units int64) {
	if units < 1 {
		return
	}
	var v view
	v.look(&sp, s, nowUS)
	switch sp.Algorithm {
	case TokenBucket, LeakyBucket:
		s.T, s.A = v.now, max(v.d-units*sp.P, 0)
	case FixedWindow:
		if v.d > 0 {
			s.T, s.A = v.now, max(v.d-units, 0)
		}
	case SlidingWindowCounter:
		if v.d > 0 || v.prev > 0 {
			cur := min(v.d, units)
			s.T, s.A, s.B = v.now, v.d-cur, max(v.prev-(units-cur), 0)
		}
	case SlidingWindowLog:
		live := s.Log[v.head:]
		for len(live) > 0 && units > 0 {
			last := &live[len(live)-1]
			n := min(last.N, units)
			last.N -= n
			s.A -= n
			units -= n
			if last.N == 0 {
				live = live[:len(live)-1]
			}
		}
		s.Log = s.Log[:v.head+len(live)]
	}
}
