package promlimit

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that the Limiters the tests build leave no goroutine.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
