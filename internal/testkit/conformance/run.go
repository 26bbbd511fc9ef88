package conformance

import (
	"errors"
	"testing"
	"time"

	"github.com/hybridlimit/hybridlimit/limit"
)

// Decider is one implementation under test: it decides a request for key at
// now and returns the decision and the binding limit's index. Implementations
// that cannot report the binding index return -1.
type Decider func(t *testing.T, key string, limits []limit.Limit, now time.Time, cost int64) (limit.Decision, int, error)

// Run plays every vector against decide, each on its own key. tol is the
// allowed error on durations (0 for exact).
func Run(t *testing.T, tol time.Duration, decide Decider) {
	t.Helper()
	for _, v := range Vectors {
		t.Run(v.Name, func(t *testing.T) {
			key := "conformance:" + v.Name
			limits := v.Limits
			for j, st := range v.Steps {
				if c, ok := v.Changes[j]; ok {
					limits = c
				}
				now := Base.Add(st.At)
				got, binding, err := decide(t, key, limits, now, st.Cost)
				w := st.Want
				if w.Err != nil {
					if !errors.Is(err, w.Err) {
						t.Fatalf("step %d: AllowN(at %v, cost %d) error = %v, want %v", j, st.At, st.Cost, err, w.Err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("step %d: AllowN(at %v, cost %d) error = %v", j, st.At, st.Cost, err)
				}
				if got.Allowed != w.Allowed || got.Remaining != w.Remaining ||
					!near(got.RetryAfter, w.RetryAfter, tol) || !near(got.ResetAfter, w.ResetAfter, tol) || !near(got.Delay, w.Delay, tol) {
					t.Fatalf("step %d: AllowN(at %v, cost %d) = %+v, want %+v", j, st.At, st.Cost, got, w)
				}
				if binding >= 0 && binding != w.Binding {
					t.Fatalf("step %d: AllowN(at %v, cost %d) binding limit = %d, want %d", j, st.At, st.Cost, binding, w.Binding)
				}
			}
		})
	}
}

func near(a, b, tol time.Duration) bool {
	d := a - b
	return d <= tol && d >= -tol
}
