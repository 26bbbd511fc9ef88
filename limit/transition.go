package limit

import "math/bits"

// view is one limit's state seen at one instant, before any charge. All
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

// floorDiv and ceilDiv divide non-negative a by positive b.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

func ceilDiv(a, b int64) int64 { return -floorDiv(-a, b) }

// quanta converts microseconds to quanta, without dividing in the common
// case of a one-microsecond quantum.
func (sp Spec) quanta(us int64) int64 {
	if sp.Q == 1 {
		return us
	}
	return floorDiv(us, sp.Q)
}

// twoTo52 and twoTo51 are the modulus of a bucket's Redis form and half of
// it: the Redis form is F = (t×R + deficit) mod 2^52, read back against the
// current quantum as a signed difference.
const (
	twoTo52 = 1 << 52
	twoTo51 = 1 << 51
)

// look sets v to the view of s at nowUS. A state that lies in the future of
// nowUS by more than a clock going forward can explain (it was stepped
// back) is rebased to nowUS, in s itself, before it is viewed: see "Clocks
// that step" in the package documentation. Nothing is charged by that.
func (v *view) look(sp *Spec, s *State, nowUS int64) {
	if nowUS < 1 {
		nowUS = 1 // T == 0 means never charged; the epoch itself counts as 1µs after it
	}
	*v = view{sp: *sp, at: nowUS, now: nowUS}
	switch sp.Algorithm {
	case TokenBucket, LeakyBucket:
		v.nq = sp.quanta(nowUS)
		if s.T == 0 || s.A <= 0 {
			break
		}
		tq := sp.quanta(s.T)
		if v.nq >= tq {
			// Refilled e*R; compared without dividing, and without
			// overflowing however long the key was idle.
			if hi, lo := bits.Mul64(uint64(v.nq-tq), uint64(sp.R)); hi == 0 && lo < uint64(s.A) {
				v.d = s.A - int64(lo)
			}
			break
		}
		// The clock is behind the last charge: read the deficit as the
		// Redis form does, modulo 2^52 (the product's low 64 bits suffice),
		// a difference of 2^51 or more being one below zero: a full bucket.
		_, lo := bits.Mul64(uint64(tq-v.nq), uint64(sp.R))
		if x := int64((lo + uint64(s.A)) & (twoTo52 - 1)); x < twoTo51 {
			v.d = x
		}
		// A deficit above the capacity cannot arise while the clock goes
		// forward: it went back. The bucket is empty as of now, and stored
		// so, or it would stay empty until the clock caught up.
		if full := sp.C * sp.P; v.d > full {
			v.d = full
			s.T, s.A = nowUS, full
		}
	case FixedWindow:
		if s.T-nowUS > sp.P {
			s.T = nowUS // more than a period ahead: the count is now's window's
		}
		v.now = max(nowUS, s.T)
		v.nq = v.now
		v.k = floorDiv(v.now, sp.P)
		if s.T != 0 && floorDiv(s.T, sp.P) == v.k {
			v.d = s.A
		}
	case SlidingWindowCounter:
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
	case SlidingWindowLog:
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

// avail is how many units the limit admits at the view's instant.
func (v *view) avail() int64 {
	sp := v.sp
	var a int64
	switch sp.Algorithm {
	case TokenBucket, LeakyBucket:
		a = floorDiv(sp.C*sp.P-v.d, sp.P)
	case FixedWindow:
		a = sp.R - v.d
	case SlidingWindowCounter:
		e := v.nq - v.k*sp.P
		a = (sp.R*sp.P-v.prev*(sp.P-e))/sp.P - v.d
	case SlidingWindowLog:
		a = sp.R - v.n
	}
	return max(a, 0)
}

// allows reports whether cost fits, exactly (no rounding of the estimate).
func (v *view) allows(cost int64) bool {
	sp := v.sp
	switch sp.Algorithm {
	case TokenBucket, LeakyBucket:
		return v.d+cost*sp.P <= sp.C*sp.P
	case FixedWindow:
		return v.d+cost <= sp.R
	case SlidingWindowCounter:
		e := v.nq - v.k*sp.P
		return v.prev*(sp.P-e)+(v.d+cost)*sp.P <= sp.R*sp.P
	case SlidingWindowLog:
		return v.n+cost <= sp.R
	}
	return false
}

// after is the time in microseconds from the request's instant until
// quantum tq: from now, even when the state is ahead of it.
func (v *view) after(tq int64) int64 { return max(tq*v.sp.Q-v.at, 0) }

// decide writes to dec the decision for cost: the figures after the charge
// when allowed, the current ones with RetryAfter when not. Written in place,
// not returned, for the reason Spec.TakeTo gives.
func (v *view) decide(dec *Decision, cost int64, allowed bool) {
	sp := v.sp
	charged := int64(0)
	if allowed {
		charged = cost
	}
	*dec = Decision{Allowed: allowed}
	switch sp.Algorithm {
	case TokenBucket, LeakyBucket:
		d := v.d + charged*sp.P
		dec.Remaining = max(floorDiv(sp.C*sp.P-d, sp.P), 0)
		dec.ResetAfter = us(v.after(v.nq + ceilDiv(d, sp.R)))
		if !allowed {
			dec.RetryAfter = us(v.after(v.nq + ceilDiv(v.d+cost*sp.P-sp.C*sp.P, sp.R)))
		} else if sp.Algorithm == LeakyBucket {
			dec.Delay = us(v.after(v.nq + ceilDiv(v.d, sp.R)))
		}
	case FixedWindow:
		dec.Remaining = sp.R - v.d - charged
		end := v.after((v.k + 1) * sp.P)
		if v.d+charged > 0 {
			dec.ResetAfter = us(end)
		}
		if !allowed {
			dec.RetryAfter = us(end)
		}
	case SlidingWindowCounter:
		cur := v.d + charged
		e := v.nq - v.k*sp.P
		dec.Remaining = max((sp.R*sp.P-v.prev*(sp.P-e))/sp.P-cur, 0)
		switch {
		case cur > 0:
			dec.ResetAfter = us(v.after((v.k + 2) * sp.P))
		case v.prev > 0:
			dec.ResetAfter = us(v.after((v.k + 1) * sp.P))
		}
		if !allowed {
			dec.RetryAfter = us(v.after(v.counterRetry(cost)))
		}
	case SlidingWindowLog:
		n := v.n + charged
		dec.Remaining = sp.R - n
		if n > 0 {
			newest := v.now // where a charge lands
			if !allowed {
				newest = v.log[len(v.log)-1].T
			}
			dec.ResetAfter = us(newest + sp.P - v.at)
		}
		if !allowed {
			dec.RetryAfter = us(v.logRetry(cost))
		}
	}
}

// counterRetry returns the first quantum at which cost fits a sliding window
// counter if nothing else is charged.
func (v *view) counterRetry(cost int64) int64 {
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

// logRetry returns the microseconds from the request's instant until
// enough events leave the window.
func (v *view) logRetry(cost int64) int64 {
	need := v.n + cost - v.sp.R
	for _, ev := range v.log[v.head:] {
		need -= ev.N
		if need <= 0 {
			return ev.T + v.sp.P - v.at
		}
	}
	return v.sp.P
}
