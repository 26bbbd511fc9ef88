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
		// toxiproxy: a toxic added to a link while the proxy stops can
		// leave the stub that passes data on blocked on a send nobody
		// receives (seen once in 20 nemesis schedules). Not ours either.
		goleak.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2/toxics.(*NoopToxic).Pipe"),
	)
}
