package faulttest

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// go-redis's pool redials a node it failed to reach in a goroutine
		// that sleeps a second between tries and sees its client's Close
		// only then. Not ours; ours are all checked.
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"),
	)
}
