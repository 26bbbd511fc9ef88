package algo

// SlidingWindowCounter: the count A of the window of T, in quanta, and B of
// the window before; the estimate previous*(1-elapsed/P)+current is
// compared exactly, never floored (remote/scripts/sliding_window_counter.lua).
var slidingWindowCounter = algorithm{
	name: "SlidingWindowCounter",
	code: "swc",
}

func counterLook(v *view, sp *Spec, s *State, nowUS int64) {
	if s.T-nowUS > sp.P*sp.Q {
		s.T = nowUS // more than a period ahead: both counts move to now
	}
	v.now = max(nowUS, s.T)
	v.nq = sp.quanta(v.now)
	v.k = floorDiv(v.nq, sp.P)
	if s.T != 0 {
		switch floorDiv(sp.quanta(s.T), sp.P) {
		case v.k:
			v.d, v.prev = s.A, s.B
		case v.k - 1:
			v.prev = s.A
		}
	}
}

func counterAvail(v *view) int64 {
	sp := v.sp
	e := v.nq - v.k*sp.P
	return (sp.R*sp.P-v.prev*(sp.P-e))/sp.P - v.d
}

func counterAllows(v *view, cost int64) bool {
	sp := v.sp
	e := v.nq - v.k*sp.P
	return v.prev*(sp.P-e)+(v.d+cost)*sp.P <= sp.R*sp.P
}

func counterDecide(v *view, dec *Decision, cost int64, allowed bool) {
	sp := v.sp
	cur := v.d
	if allowed {
		cur += cost
	}
	e := v.nq - v.k*sp.P
	dec.Remaining = max((sp.R*sp.P-v.prev*(sp.P-e))/sp.P-cur, 0)
	switch {
	case cur > 0:
		dec.ResetAfter = us(v.after((v.k + 2) * sp.P))
	case v.prev > 0:
		dec.ResetAfter = us(v.after((v.k + 1) * sp.P))
	}
	if !allowed {
		dec.RetryAfter = us(v.after(counterRetry(v, cost)))
	}
}

// counterRetry returns the first quantum at which cost fits if nothing
// else is charged.
func counterRetry(v *view, cost int64) int64 {
	sp := v.sp
	// Later in this window: prev*(P-e') <= (R-cur-cost)*P.
	if a := (sp.R - v.d - cost) * sp.P; a >= 0 && v.prev > 0 {
		if e := sp.P - a/v.prev; e < sp.P {
			return v.k*sp.P + e
		}
	}
	// In the next window the current count becomes the previous one.
	e := int64(0)
	if v.d > 0 {
		e = max(sp.P-(sp.R-cost)*sp.P/v.d, 0)
	}
	return (v.k+1)*sp.P + e
}

// counterGiveBack returns units to the count of the lease's window while it
// is still counted, as the current or the previous window.
func counterGiveBack(v *view, s *State, leaseUS, units int64) {
	sp := v.sp
	lk := floorDiv(floorDiv(leaseUS, sp.Q), sp.P)
	switch {
	case lk == v.k && v.d > 0:
		s.T, s.A, s.B = v.now, max(v.d-units, 0), v.prev
	case lk == v.k-1 && v.prev > 0:
		s.T, s.A, s.B = v.now, v.d, max(v.prev-units, 0)
	}
}

// counterRefund takes units from the current count, then the previous.
func counterRefund(v *view, s *State, units int64) {
	if v.d > 0 || v.prev > 0 {
		cur := min(v.d, units)
		s.T, s.A, s.B = v.now, v.d-cur, max(v.prev-(units-cur), 0)
	}
}

// counterIdleAt is the end of the window after the charged one, since the
// charged window still weighs on the next one.
func counterIdleAt(sp *Spec, s *State) int64 {
	if s.T == 0 {
		return 0
	}
	return (s.T/sp.Q/sp.P + 2) * sp.P * sp.Q
}

func counterCommit(v *view, s *State, cost int64) { s.T, s.A, s.B = v.now, v.d+cost, v.prev }
