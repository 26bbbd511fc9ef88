package limit

import (
	"fmt"
	"slices"
	"time"
)

// Convert returns the state of limit to that carries on s, the state of
// limit from, at now, as a store converts a named limit that changed (see
// "Limits that change" in the package documentation): for TestConformance,
// which keeps states as a store does.
func Convert(s State, from, to Limit, now time.Time) (State, error) {
	if err := from.Validate(); err != nil {
		return s, err
	}
	if err := to.Validate(); err != nil {
		return s, err
	}
	if from.Algorithm != to.Algorithm {
		return s, fmt.Errorf("%w: cannot convert %v to %v: another algorithm starts afresh", ErrInvalidLimit, from, to)
	}
	fs, _ := from.spec()
	ts, _ := to.spec()
	ts.Convert(&fs, &s.s, now.UnixMicro())
	return s, nil
}

// Clone returns a copy of s that shares no event storage with it, keeping
// a nil log nil.
func Clone(s State) State {
	if s.s.Log != nil {
		s.s.Log = slices.Clone(s.s.Log)
	}
	return s
}
