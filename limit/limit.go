package limit

import (
	"fmt"
	"math/bits"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hybridlimit/hybridlimit/internal/algo"
)

// Bounds on a Limit. Within them every transition is exact in both int64 and
// IEEE double arithmetic.
const (
	// MaxRate is the largest Rate and Burst accepted: 2^40 (about 1.1e12).
	MaxRate = 1 << 40
	// MaxPeriod is the longest Period accepted.
	MaxPeriod = 366 * 24 * time.Hour
	// MaxLogRate is the largest Rate accepted for SlidingWindowLog, which
	// stores one event per unit.
	MaxLogRate = 10_000
	// MaxFill is the longest a bucket may take to fill from empty
	// (Burst*Period/Rate), so that every reported duration fits.
	MaxFill = 100 * 365 * 24 * time.Hour

	// MaxNameLen is the longest Name accepted, in bytes.
	MaxNameLen = 128
)

// Limit is a rate limit: Rate units per Period, enforced by Algorithm.
//
// The zero Algorithm is TokenBucket. Burst is the capacity of TokenBucket and
// LeakyBucket; 0 means Rate. The window algorithms take no Burst (0, or equal
// to Rate). Period must be a whole number of microseconds.
//
// Limit is a comparable value; two equal Limits share state in a limiter.
//
// Name, when set, is what a store keys the limit's state by, with the
// algorithm, instead of its rate, period and burst: a limit that changes
// under the same name keeps its budget. A store that meets a named
// limit's state written for another rate, period or burst converts it
// (see "Limits that change" in the package documentation): the units in
// use stay in use, at most the new capacity. An unnamed limit that changes is another limit, whose state
// starts full (the old state is dropped when it expires). A change of
// algorithm starts afresh, named or not.
type Limit struct {
	// Algorithm decides how the units are counted; the zero value is
	// TokenBucket.
	Algorithm Algorithm
	// Rate is the units admitted per Period: 1 to MaxRate (MaxLogRate for
	// SlidingWindowLog).
	Rate int64
	// Period is the time over which Rate units are admitted: a whole
	// number of microseconds, at most MaxPeriod.
	Period time.Duration
	// Burst is the capacity of a TokenBucket or LeakyBucket, up to MaxRate;
	// 0 means Rate. The window algorithms take 0 or Rate.
	Burst int64
	// Name is 0 to MaxNameLen bytes of UTF-8 without control characters.
	Name string
}

// PerSecond returns a token bucket of n units per second with a burst of n.
func PerSecond(n int64) Limit { return Limit{Rate: n, Period: time.Second} }

// PerMinute returns a token bucket of n units per minute with a burst of n.
func PerMinute(n int64) Limit { return Limit{Rate: n, Period: time.Minute} }

// PerHour returns a token bucket of n units per hour with a burst of n.
func PerHour(n int64) Limit { return Limit{Rate: n, Period: time.Hour} }

// String formats the limit as, for example, "TokenBucket(100/1m0s, burst
// 100)", after its name and a colon when it has one: "api: FixedWindow(10/1s)".
func (l Limit) String() string {
	name := ""
	if l.Name != "" {
		name = l.Name + ": "
	}
	if l.Algorithm.isBucket() {
		return fmt.Sprintf("%s%v(%d/%v, burst %d)", name, l.Algorithm, l.Rate, l.Period, l.Capacity())
	}
	return fmt.Sprintf("%s%v(%d/%v)", name, l.Algorithm, l.Rate, l.Period)
}

// Capacity returns the most units the limit admits at once: Burst for the
// buckets when set, otherwise Rate.
func (l Limit) Capacity() int64 {
	if l.Algorithm.isBucket() && l.Burst > 0 {
		return l.Burst
	}
	return l.Rate
}

// CheckCost reports whether cost is a valid request against l: ErrInvalidCost
// below 1, ErrCostExceedsLimit above the capacity. It assumes l is valid.
func (l Limit) CheckCost(cost int64) error {
	if cost < 1 {
		return fmt.Errorf("%w: got %d", ErrInvalidCost, cost)
	}
	if c := l.Capacity(); cost > c {
		return fmt.Errorf("%w: cost %d, capacity %d of %v", ErrCostExceedsLimit, cost, c, l)
	}
	return nil
}

// Validate reports whether the limit can be enforced. Errors wrap
// ErrInvalidLimit and say what is wrong.
//
// Within the bounds, a limit must also be computable exactly: time is
// counted in quanta of a power of ten microseconds that divides the period,
// and for the buckets and SlidingWindowCounter capacity × period in quanta
// must stay within 2^50, so that every product the transitions form fits a
// double's 53-bit mantissa and the Lua scripts of package remote decide
// exactly as this package does.
func (l Limit) Validate() error {
	if !l.Algorithm.Valid() {
		return fmt.Errorf("%w: unknown algorithm %d", ErrInvalidLimit, l.Algorithm)
	}
	if l.Rate < 1 || l.Rate > MaxRate {
		return fmt.Errorf("%w: rate %d out of range [1, %d]", ErrInvalidLimit, l.Rate, int64(MaxRate))
	}
	if l.Algorithm == SlidingWindowLog && l.Rate > MaxLogRate {
		return fmt.Errorf("%w: rate %d above %d for SlidingWindowLog, which stores one event per unit; use SlidingWindowCounter", ErrInvalidLimit, l.Rate, MaxLogRate)
	}
	if l.Period < time.Microsecond || l.Period > MaxPeriod {
		return fmt.Errorf("%w: period %v out of range [1µs, %v]", ErrInvalidLimit, l.Period, MaxPeriod)
	}
	if l.Period%time.Microsecond != 0 {
		return fmt.Errorf("%w: period %v is not a whole number of microseconds", ErrInvalidLimit, l.Period)
	}
	if l.Burst < 0 || l.Burst > MaxRate {
		return fmt.Errorf("%w: burst %d out of range [0, %d]", ErrInvalidLimit, l.Burst, int64(MaxRate))
	}
	if !l.Algorithm.isBucket() && l.Burst != 0 && l.Burst != l.Rate {
		return fmt.Errorf("%w: burst %d given for %v, which takes none", ErrInvalidLimit, l.Burst, l.Algorithm)
	}
	if err := checkName(l.Name); err != nil {
		return err
	}
	c := l.Capacity()
	p := l.Period.Microseconds()
	// Buckets: the time to fill from empty must fit a time.Duration.
	if l.Algorithm.isBucket() {
		hi, lo := bits.Mul64(uint64(c), uint64(p))
		fhi, flo := bits.Mul64(uint64(l.Rate), uint64(MaxFill.Microseconds()))
		if hi > fhi || (hi == fhi && lo > flo) {
			return fmt.Errorf("%w: burst %d takes longer than %v to refill at %d/%v", ErrInvalidLimit, c, MaxFill, l.Rate, l.Period)
		}
	}
	if _, ok := l.spec(); !ok {
		return fmt.Errorf("%w: %d per %v cannot be computed exactly (capacity × period too large); use a period of whole seconds or a smaller rate", ErrInvalidLimit, c, l.Period)
	}
	return nil
}

// LongestDelay is the longest Delay l gives a request it admits: for a
// LeakyBucket, that of a request of one unit finding the queue as full as
// it can be (Capacity-1 units ahead of it), about (Capacity-1)×Period/Rate;
// 0 for the other algorithms, which delay nothing, and for an invalid
// limit. A caller that will not hold a request that long can lower Burst.
func (l Limit) LongestDelay() time.Duration {
	if l.Validate() != nil {
		return 0
	}
	sp, _ := l.spec()
	return sp.LongestDelay()
}

// spec returns the integer form of l, which must be valid but for its
// exactness, and whether l is exact.
func (l Limit) spec() (algo.Spec, bool) {
	return algo.New(algo.ID(l.Algorithm), l.Rate, l.Period.Microseconds(), l.Capacity(), l.Name != "")
}

// checkName reports a Name that is too long, not UTF-8 or holds a control
// character.
func checkName(name string) error {
	if len(name) > MaxNameLen {
		return fmt.Errorf("%w: name of %d bytes, at most %d", ErrInvalidLimit, len(name), MaxNameLen)
	}
	if !utf8.ValidString(name) {
		return fmt.Errorf("%w: name %q is not UTF-8", ErrInvalidLimit, name)
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return fmt.Errorf("%w: name %q holds a control character", ErrInvalidLimit, name)
		}
	}
	return nil
}

// CheckDistinct reports, wrapping ErrInvalidLimit, a limit given twice in
// one request (also under two names), or two limits of one name: both
// would name the same state, or charge two states alike, and either would
// surprise someone.
func CheckDistinct(limits []Limit) error {
	for i := 1; i < len(limits); i++ {
		for j := 0; j < i; j++ {
			a, b := limits[i], limits[j]
			if a.Name != "" && a.Name == b.Name {
				return fmt.Errorf("%w: two limits named %q", ErrInvalidLimit, a.Name)
			}
			a.Name, b.Name = "", ""
			if a.Canonical() == b.Canonical() {
				return fmt.Errorf("%w: %v given twice", ErrInvalidLimit, a)
			}
		}
	}
	return nil
}

// Canonical returns the limit with Burst spelled out for TokenBucket and
// LeakyBucket (PerSecond(10) and a Burst of 10 are one limit) and zero for
// the window algorithms. Stores key state by it.
func (l Limit) Canonical() Limit {
	if l.Algorithm.isBucket() {
		l.Burst = l.Capacity()
	} else {
		l.Burst = 0
	}
	return l
}
