package remote

import (
	"fmt"
	"strings"

	"github.com/hybridlimit/hybridlimit/limit"
)

// Request is one validated request for a key against its limits: a
// decision of N units, all or nothing (NewDecision), or a lease of up to N
// units, as many as every limit admits now (NewLease). The Store's
// methods that decide, give back, peek, refund or reset take a Request, so
// input is validated once, where the Request is built; the zero Request is
// refused by them all.
type Request struct {
	key    string
	n      int64
	limits []limit.Limit
	lease  bool
	give   bool  // a give-back of n units of a lease taken at at
	at     int64 // a give-back's: the server time (µs) of the lease (Result.At)
}

// NewDecision validates a decision of n units for key against limits: an
// error wrapping ErrInvalidKey for an empty key or one longer than
// MaxKeyLen bytes; limit.ErrInvalidLimit for no limits, more than
// MaxLimits (ErrTooManyLimits), an invalid limit or one given twice;
// limit.ErrInvalidCost for n below 1; limit.ErrCostExceedsLimit for n
// above a limit's capacity. The Request refers to key and limits; see
// Keep.
func NewDecision(key string, n int64, limits ...limit.Limit) (Request, error) {
	if err := checkKey(key); err != nil {
		return Request{}, err
	}
	if err := CheckLimits(n, limits...); err != nil {
		return Request{}, err
	}
	return Request{key: key, n: n, limits: limits}, nil
}

// NewLease validates a lease of up to want units for key against limits:
// the errors of NewDecision, except that want is only checked to be at
// least 1 (the script gives no more than each limit holds).
func NewLease(key string, want int64, limits ...limit.Limit) (Request, error) {
	if err := checkKey(key); err != nil {
		return Request{}, err
	}
	if err := checkLimits(limits); err != nil {
		return Request{}, err
	}
	return Request{key: key, limits: limits}.Lease(want)
}

// Lease is a lease of up to want units for r's key and limits, which r
// validated: only want is checked (at least 1).
func (r Request) Lease(want int64) (Request, error) {
	if want < 1 {
		return Request{}, fmt.Errorf("%w: lease of %d", limit.ErrInvalidCost, want)
	}
	r.n, r.lease = want, true
	return r, nil
}

// GiveBack is a give-back of units of a lease of r's key and limits, taken
// at server time at (Result.At): Store.GiveBack as a request, so that
// give-backs travel in a decide call with the node's other requests
// (DecideMany) rather than one round trip each. Its Result carries only
// Err. Only units is checked (at least 1).
func (r Request) GiveBack(units, at int64) (Request, error) {
	if units < 1 {
		return Request{}, fmt.Errorf("%w: give-back of %d", limit.ErrInvalidCost, units)
	}
	r.n, r.lease, r.give, r.at = units, false, true, at
	return r, nil
}

// Keep returns r with its own copy of the key and its limits appended to
// buf[:0], for a request kept beyond the call that built it (queued for a
// batch, held by a lease): the caller's memory must not escape.
func (r Request) Keep(buf []limit.Limit) Request {
	// A new value, not r with its fields replaced: escape analysis follows
	// values, not fields, and r's limits would escape with the result.
	return Request{key: strings.Clone(r.key), n: r.n, limits: append(buf[:0], r.limits...), lease: r.lease, give: r.give, at: r.at}
}

// Key is the user key the request is for.
func (r Request) Key() string { return r.key }

// N is the cost of a decision, or the units a lease asks for.
func (r Request) N() int64 { return r.n }

// Limits are the request's limits, in the order given.
func (r Request) Limits() []limit.Limit { return r.limits }

// IsLease reports whether r is a lease (NewLease, Lease).
func (r Request) IsLease() bool { return r.lease }

// built reports whether r was built by NewDecision or NewLease: a valid
// request has at least one limit.
func (r Request) built() error {
	if len(r.limits) == 0 {
		return fmt.Errorf("%w: a Request not built by NewDecision or NewLease", limit.ErrInvalidLimit)
	}
	return nil
}

// CheckLimits reports whether a decision of n units against limits is
// valid, with the error NewDecision would return for it.
func CheckLimits(n int64, limits ...limit.Limit) error {
	if err := checkLimits(limits); err != nil {
		return err
	}
	for _, l := range limits {
		if err := l.CheckCost(n); err != nil {
			return err
		}
	}
	return nil
}

func checkKey(key string) error {
	if len(key) == 0 || len(key) > MaxKeyLen {
		return fmt.Errorf("%w: length %d, want 1 to %d bytes", ErrInvalidKey, len(key), MaxKeyLen)
	}
	return nil
}

// checkLimits checks what a decision and a lease share: one to MaxLimits
// valid limits, none given twice.
func checkLimits(limits []limit.Limit) error {
	if len(limits) == 0 {
		return fmt.Errorf("%w: no limits", limit.ErrInvalidLimit)
	}
	if len(limits) > MaxLimits {
		return fmt.Errorf("%w: %d, at most %d", ErrTooManyLimits, len(limits), MaxLimits)
	}
	for _, l := range limits {
		if err := l.Validate(); err != nil {
			return err
		}
	}
	return limit.CheckDistinct(limits)
}
