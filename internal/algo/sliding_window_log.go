package algo

// SlidingWindowLog: every charge an Event in Log, oldest first, and A the
// units in Log; those in (now-P, now] count, exactly
// (remote/scripts/sliding_window_log.lua).
var slidingWindowLog = algorithm{
	name: "SlidingWindowLog",
	code: "swl",
}

func logLook(v *view, sp *Spec, s *State, nowUS int64) {
	if n := len(s.Log); n > 0 && s.Log[n-1].T-nowUS > sp.P {
		rebaseLog(s, nowUS)
	}
	if len(s.Log) > 0 {
		v.now = max(nowUS, s.Log[len(s.Log)-1].T)
	}
	v.nq = v.now
	v.n = s.A
	v.log = s.Log
	for v.head < len(s.Log) && s.Log[v.head].T <= v.now-sp.P {
		v.n -= s.Log[v.head].N
		v.head++
	}
}

// rebaseLog makes the events of s charged after nowUS one event at nowUS,
// so that they leave the window a period after nowUS.
func rebaseLog(s *State, nowUS int64) {
	i := len(s.Log)
	var n int64
	for i > 0 && s.Log[i-1].T > nowUS {
		i--
		n += s.Log[i].N
	}
	if i > 0 && s.Log[i-1].T == nowUS {
		s.Log[i-1].N += n
		s.Log = s.Log[:i]
	} else {
		s.Log[i] = Event{T: nowUS, N: n}
		s.Log = s.Log[:i+1]
	}
	s.T = nowUS
}

func logDecide(v *view, dec *Decision, cost int64, allowed bool) {
	sp := v.sp
	n := v.n
	if allowed {
		n += cost
	}
	dec.Remaining = sp.R - n
	if n > 0 {
		newest := v.now // where a charge lands
		if !allowed {
			newest = v.log[len(v.log)-1].T
		}
		dec.ResetAfter = us(newest + sp.P - v.at)
	}
	if !allowed {
		dec.RetryAfter = us(logRetry(v, cost))
	}
}

// logRetry returns the microseconds from the request's instant until
// enough events leave the window.
func logRetry(v *view, cost int64) int64 {
	need := v.n + cost - v.sp.R
	for _, ev := range v.log[v.head:] {
		need -= ev.N
		if need <= 0 {
			return ev.T + v.sp.P - v.at
		}
	}
	return v.sp.P
}

func logCommit(v *view, s *State, cost int64) {
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

// logGiveBack removes the oldest events in the window charged at or after
// the lease: the lease's own unless the clock went backwards meanwhile.
func logGiveBack(v *view, s *State, leaseUS, units int64) {
	log, a := s.Log, s.A // in locals: the loop's appends would make s reread
	live := log[:v.head]
	for _, ev := range log[v.head:] {
		if ev.T >= leaseUS && units > 0 {
			n := min(ev.N, units)
			ev.N -= n
			a -= n
			units -= n
		}
		if ev.N > 0 {
			live = append(live, ev)
		}
	}
	s.Log, s.A = live, a
}

// logRefund removes the newest events.
func logRefund(v *view, s *State, units int64) {
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

// logIdleAt is when the newest event leaves the window.
func logIdleAt(sp *Spec, s *State) int64 {
	if len(s.Log) == 0 {
		return 0
	}
	return s.Log[len(s.Log)-1].T + sp.P
}

func logAvail(v *view) int64 { return v.sp.R - v.n }

func logAllows(v *view, cost int64) bool { return v.n+cost <= v.sp.R }
