package grpclimit

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind: a gRPC
// server's, a client connection's, Watch's.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
