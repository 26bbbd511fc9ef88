package algo

// FixedWindow: the count A of the window [k*P, (k+1)*P) holding T, in
// microseconds (remote/scripts/fixed_window.lua).
var fixedWindow = algorithm{
	name: "FixedWindow",
	code: "fw",
}

func fixedLook(v *view, sp *Spec, s *State, nowUS int64) {
	if s.T-nowUS > sp.P {
		s.T = nowUS // more than a period ahead: the count is now's window's
	}
	v.now = max(nowUS, s.T)
	v.nq = v.now
	v.k = floorDiv(v.now, sp.P)
	if s.T != 0 && floorDiv(s.T, sp.P) == v.k {
		v.d = s.A
	}
}

func fixedDecide(v *view, dec *Decision, cost int64, allowed bool) {
	charged := int64(0)
	if allowed {
		charged = cost
	}
	dec.Remaining = v.sp.R - v.d - charged
	end := v.after((v.k + 1) * v.sp.P)
	if v.d+charged > 0 {
		dec.ResetAfter = us(end)
	}
	if !allowed {
		dec.RetryAfter = us(end)
	}
}

// fixedGiveBack returns units only while the lease's window is counted.
func fixedGiveBack(v *view, s *State, leaseUS, units int64) {
	if floorDiv(leaseUS, v.sp.P) == v.k && v.d > 0 {
		s.T, s.A = v.now, max(v.d-units, 0)
	}
}

func fixedRefund(v *view, s *State, units int64) {
	if v.d > 0 {
		s.T, s.A = v.now, max(v.d-units, 0)
	}
}

// fixedIdleAt is the end of the charged window.
func fixedIdleAt(sp *Spec, s *State) int64 {
	if s.T == 0 {
		return 0
	}
	return (s.T/sp.P + 1) * sp.P
}

func fixedAvail(v *view) int64 { return v.sp.R - v.d }

func fixedAllows(v *view, cost int64) bool { return v.d+cost <= v.sp.R }

func fixedCommit(v *view, s *State, cost int64) { s.T, s.A = v.now, v.d+cost }
