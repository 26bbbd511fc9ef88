package limit

import (
	"fmt"
	"time"
)

// Convert returns the state of limit to that carries on s, the state of
// limit from, at now: what a store does when a named limit changes its
// rate, period or burst. The units from has in use at now (its capacity
// minus what it admits) stay in use, charged afresh to to at now and at
// most its capacity: a client that used 80 of 100 and meets a new limit of
// 50 is denied until 50 units have refilled or left the window, one that
// meets 200 has 120 left. A state from no longer holds (every unit
// admissible) converts to the zero State. Both limits must be valid and
// share an algorithm.
func Convert(s State, from, to Limit, now time.Time) (State, error) {
	fs, err := from.Spec()
	if err != nil {
		return s, err
	}
	ts, err := to.Spec()
	if err != nil {
		return s, err
	}
	if fs.Algorithm != ts.Algorithm {
		return s, fmt.Errorf("%w: cannot convert %v to %v: another algorithm starts afresh", ErrInvalidLimit, from, to)
	}
	ts.Convert(&fs, &s, now.UnixMicro())
	return s, nil
}

// Convert rewrites *s, the state of from, as sp's at nowUS (see [Convert]).
// It is the transition the Lua scripts of package remote run when a named
// key's stored spec differs from its request's.
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
