package redistest

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind, such as
// the one reaping a redis-server process.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
