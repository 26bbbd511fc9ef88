package algo

import (
	"strings"
	"testing"
)

// TestDispatchEveryAlgorithm runs every operation of dispatch.go on every
// algorithm, so that an algorithm added without its cases fails here rather
// than panicking in a store, and checks its names.
func TestDispatchEveryAlgorithm(t *testing.T) {
	codes := map[string]bool{}
	for a := range numIDs {
		t.Run(a.String(), func(t *testing.T) {
			if strings.HasPrefix(a.String(), "Algorithm(") || a.Code() == "" || codes[a.Code()] {
				t.Fatalf("ID %d: String() = %q, Code() = %q, want a name and a code of its own", a, a.String(), a.Code())
			}
			codes[a.Code()] = true
			sp, ok := New(a, 10, 1_000_000, 10, false)
			if !ok {
				t.Fatalf("New(%v, 10/s) is not exact", a)
			}
			var s State
			now := int64(1_767_225_600_000_000)
			var d Decision
			sp.TakeTo(&d, &s, now, 3) // the fast path needs a charged bucket
			sp.TakeTo(&d, &s, now+1, 3)
			if !d.Allowed || d.Remaining != 4 {
				t.Fatalf("%v: two requests of 3 = %+v, want allowed, Remaining 4", a, d)
			}
			states, specs := []*State{&s}, []Spec{sp}
			if g, _, _ := LeaseSpecs(states, specs, now+2, 2); g != 2 {
				t.Fatalf("%v: LeaseSpecs(2) granted %d, want 2", a, g)
			}
			PeekSpecs(&d, states, specs, now+3, 1)
			GiveBackSpecs(states, specs, now+3, now+2, 1)
			RefundSpecs(states, specs, now+3, 1)
			var to Spec
			if to, ok = New(a, 20, 1_000_000, 20, false); !ok {
				t.Fatalf("New(%v, 20/s) is not exact", a)
			}
			to.Convert(&sp, &s, now+3)
			if sp.IdleAt(&s) == 0 {
				t.Fatalf("%v: IdleAt of a charged state = 0", a)
			}
		})
	}
}
