package conformance

import "testing"

// TestClockStepVectorsCheckRetryAfter checks that every clock-step vector
// proves its last RetryAfter truthful: the denial is followed, at exactly
// At+RetryAfter, by the same request, admitted.
func TestClockStepVectorsCheckRetryAfter(t *testing.T) {
	for _, v := range clockSteps {
		last := -1
		for j, st := range v.Steps {
			if st.Want.Err == nil && !st.Want.Allowed {
				last = j
			}
		}
		if last < 0 {
			t.Errorf("%s: no denial", v.Name)
			continue
		}
		d := v.Steps[last]
		found := false
		for _, st := range v.Steps[last+1:] {
			if st.At == d.At+d.Want.RetryAfter && st.Cost == d.Cost && st.Want.Allowed {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: step %d (at %v, cost %d) denies for %v, but no later step at %v with that cost is admitted",
				v.Name, last, d.At, d.Cost, d.Want.RetryAfter, d.At+d.Want.RetryAfter)
		}
	}
}
