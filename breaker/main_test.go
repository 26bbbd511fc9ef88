package breaker_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: the
// breaker starts none, and the tests' own must all end.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
