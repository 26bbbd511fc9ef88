package algo

import "time"

// maxScaled bounds every product of a count and a period in quanta.
const maxScaled = 1 << 50

// Spec is the integer form of a valid limit, as the transitions of this
// package and the Lua scripts of package remote compute with it. Time is
// counted in quanta of Q microseconds; the period is P quanta.
type Spec struct {
	Algorithm ID // the algorithm the transitions run
	// Named reports whether the limit has a name, which the store compares
	// itself.
	Named bool
	Q     int64 // microseconds per quantum: a power of ten dividing the period
	P     int64 // period in quanta
	R     int64 // rate: units per period
	C     int64 // capacity
}

// New returns the Spec of a limit of algorithm a, rate units per period of
// periodUS microseconds, capacity c, with a name or not, and whether the
// limit can be computed exactly. For the buckets and SlidingWindowCounter
// the quantum is the smallest power of ten microseconds that divides the
// period and keeps c*P within 2^50, so that no product overflows a double's
// 53-bit mantissa; FixedWindow and SlidingWindowLog form no such product
// and always count microseconds. The other bounds on a limit are package
// limit's to check, before.
func New(a ID, rate, periodUS, c int64, named bool) (Spec, bool) {
	s := Spec{Algorithm: a, Named: named, Q: 1, P: periodUS, R: rate, C: c}
	if a == FixedWindow || a == SlidingWindowLog {
		return s, true // no product of a count and a period is formed
	}
	for s.Q <= periodUS {
		if periodUS%s.Q != 0 {
			break
		}
		s.P = periodUS / s.Q
		if c <= maxScaled/s.P {
			return s, true
		}
		s.Q *= 10
	}
	return Spec{}, false
}

// Matches reports whether sp is the Spec of the limit of algorithm a, rate,
// period and burst, with a name or not: whether that limit is valid and has
// the canonical form of the limit sp was computed from. It is exact and
// costs a few comparisons, where New searches for the quantum: stores that
// keep a Spec per state find a request's state by it without keeping the
// limit too. sp must come from New. For a named limit, Matches compares no
// name: the store compares them.
func (sp *Spec) Matches(a ID, rate int64, period time.Duration, burst int64, named bool) bool {
	// A valid limit has the Spec of its canonical form, and the canonical
	// form is fixed by the algorithm, rate, period and capacity: a Burst
	// equal to the capacity, or 0 for a capacity equal to the rate. Every
	// other Burst is another limit or invalid (a negative Burst, or a
	// window's Burst other than 0 and the rate).
	return sp.Algorithm == a && sp.R == rate && sp.Named == named &&
		int64(period) == sp.P*sp.Q*int64(time.Microsecond) &&
		(burst == sp.C || burst == 0 && rate == sp.C)
}

// quanta converts microseconds to quanta, without dividing in the common
// case of a one-microsecond quantum.
func (sp *Spec) quanta(us int64) int64 {
	if sp.Q == 1 {
		return us
	}
	return floorDiv(us, sp.Q)
}

// floorDiv and ceilDiv divide a by positive b, rounding down and up.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

func ceilDiv(a, b int64) int64 { return -floorDiv(-a, b) }
