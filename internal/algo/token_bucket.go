package algo

import "math/bits"

// TokenBucket. The state is the deficit (capacity minus tokens) scaled by
// the period in quanta, A, as of the last charge, T; in Redis it is one
// integer, (T×R + A) mod 2^52, read back against the current quantum
// (remote/scripts/token_bucket.lua). LeakyBucket shares all of it but
// decide.
var tokenBucket = algorithm{
	name:   "TokenBucket",
	code:   "tb",
	bucket: true,
}

// twoTo52 and twoTo51 are the modulus of a bucket's Redis form and half of
// it: the Redis form is F = (t×R + deficit) mod 2^52, read back against the
// current quantum as a signed difference.
const (
	twoTo52 = 1 << 52
	twoTo51 = 1 << 51
)

func bucketLook(v *view, sp *Spec, s *State, nowUS int64) {
	v.nq = sp.quanta(nowUS)
	if s.T == 0 || s.A <= 0 {
		return
	}
	tq := sp.quanta(s.T)
	if v.nq >= tq {
		// Refilled e*R; compared without dividing, and without
		// overflowing however long the key was idle.
		if hi, lo := bits.Mul64(uint64(v.nq-tq), uint64(sp.R)); hi == 0 && lo < uint64(s.A) {
			v.d = s.A - int64(lo)
		}
		return
	}
	// The clock is behind the last charge: read the deficit as the Redis
	// form does, modulo 2^52 (the product's low 64 bits suffice), a
	// difference of 2^51 or more being one below zero: a full bucket.
	_, lo := bits.Mul64(uint64(tq-v.nq), uint64(sp.R))
	if x := int64((lo + uint64(s.A)) & (twoTo52 - 1)); x < twoTo51 {
		v.d = x
	}
	// A deficit above the capacity cannot arise while the clock goes
	// forward: it went back. The bucket is empty as of now, and stored so,
	// or it would stay empty until the clock caught up.
	if full := sp.C * sp.P; v.d > full {
		v.d = full
		s.T, s.A = nowUS, full
	}
}

func bucketAvail(v *view) int64 { return floorDiv(v.sp.C*v.sp.P-v.d, v.sp.P) }

func bucketAllows(v *view, cost int64) bool {
	return v.d+cost*v.sp.P <= v.sp.C*v.sp.P
}

func bucketDecide(v *view, dec *Decision, cost int64, allowed bool) {
	sp := v.sp
	d := v.d
	if allowed {
		d += cost * sp.P
	}
	dec.Remaining = max(floorDiv(sp.C*sp.P-d, sp.P), 0)
	dec.ResetAfter = us(v.after(v.nq + ceilDiv(d, sp.R)))
	if !allowed {
		dec.RetryAfter = us(v.after(v.nq + ceilDiv(v.d+cost*sp.P-sp.C*sp.P, sp.R)))
	}
}

func bucketCommit(v *view, s *State, cost int64) {
	s.T, s.A = v.now, v.d+cost*v.sp.P
}

// bucketGiveBack and bucketRefund return the units whenever they were
// taken, never above the capacity.
func bucketGiveBack(v *view, s *State, _, units int64) { bucketRefund(v, s, units) }

func bucketRefund(v *view, s *State, units int64) {
	s.T, s.A = v.now, max(v.d-units*v.sp.P, 0)
}

// bucketIdleAt is when the deficit (or queue) has drained. Every time in a
// State is positive, so plain division floors.
func bucketIdleAt(sp *Spec, s *State) int64 {
	if s.T == 0 || s.A <= 0 {
		return 0
	}
	return (s.T/sp.Q + (s.A+sp.R-1)/sp.R) * sp.Q
}

// takeTokens is TakeTo for the most common case, a token bucket counted in
// microseconds with a clock not behind its last charge (s.T <= nowUS, and
// s.T > 0): the same arithmetic as look, allows, commit and decide,
// without building a view or dispatching.
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
