package remote

import (
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Bounds applied by BoundOptions where the caller left a field at zero, or
// set it larger.
const (
	DefaultDialTimeout  = 250 * time.Millisecond
	DefaultReadTimeout  = 100 * time.Millisecond
	DefaultWriteTimeout = 100 * time.Millisecond
	DefaultPoolTimeout  = 100 * time.Millisecond
)

// BoundOptions returns a copy of o made safe for running rate-limit scripts:
//
//   - ContextTimeoutEnabled, so a context deadline ends a blocked socket read
//     (a paused Redis still accepts connections);
//   - MaxRetries -1: a script that timed out may have run, and a retry would
//     charge it twice;
//   - dial, read, write and pool timeouts of at most the Default* values,
//     and one dial attempt per call (go-redis retries five times by default);
//   - maintenance notifications off (plain Redis 7 does not speak them);
//
// Nothing runs on a new connection but go-redis's own handshake and
// o.OnConnect: the scripts are loaded by Store.Load and again whenever a
// call meets NOSCRIPT, never inside the first call on a connection (on a
// node with 50 ms of latency, that extra round trip made the first call on
// every new connection time out). Store.Connect opens connections ahead.
//
// Addr, credentials, TLS, DB and pool size are kept as given.
func BoundOptions(o *redis.Options) *redis.Options {
	c := *o
	c.ContextTimeoutEnabled = true
	c.MaxRetries = -1
	c.DialTimeout = bound(c.DialTimeout, DefaultDialTimeout)
	c.ReadTimeout = bound(c.ReadTimeout, DefaultReadTimeout)
	c.WriteTimeout = bound(c.WriteTimeout, DefaultWriteTimeout)
	c.PoolTimeout = bound(c.PoolTimeout, DefaultPoolTimeout)
	c.DialerRetries = 1 // a refused connection is an answer: fail fast, let the breaker count it
	c.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	c.DisableIdentity = true
	return &c
}

func bound(v, limit time.Duration) time.Duration {
	if v <= 0 || v > limit {
		return limit
	}
	return v
}

// NewClient returns a go-redis client with BoundOptions(o).
func NewClient(o *redis.Options) *redis.Client {
	return redis.NewClient(BoundOptions(o))
}
