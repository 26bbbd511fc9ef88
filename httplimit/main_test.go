package httplimit

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind, such as
// Watch's.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
