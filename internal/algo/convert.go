package algo

// Convert rewrites *s, the state of the limit of Spec from, as the state of
// sp at nowUS: what a store does when a named limit changes its rate,
// period or burst. The units from has in use at nowUS (its capacity minus
// what it admits) stay in use, charged afresh to sp at nowUS and at most its
// capacity: a client that used 80 of 100 and meets a new limit of 50 is
// denied until 50 units have refilled or left the window, one that meets
// 200 has 120 left. A state from no longer holds (every unit admissible)
// converts to the zero State. Both specs must share an algorithm. It is the
// transition the Lua scripts of package remote run when a named key's
// stored spec differs from its request's.
func (sp *Spec) Convert(from *Spec, s *State, nowUS int64) {
	var v view
	v.look(from, s, nowUS)
	used := from.C - v.avail()
	*s = State{}
	if used <= 0 {
		return
	}
	v.look(sp, s, nowUS)
	v.commit(s, min(used, sp.C))
}
