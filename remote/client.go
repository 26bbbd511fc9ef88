package remote

import (
	"fmt"
	"net"
	"strconv"
	"strings"
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

// DefaultClusterStateReload is the longest BoundClusterOptions lets a
// Cluster client keep its slot map (go-redis's default is 60 s).
const DefaultClusterStateReload = time.Second

// BoundClusterOptions is BoundOptions for a Redis Cluster client that runs
// scripts of your own: the same timeouts, no retries and no redirects
// (go-redis spends MaxRedirects on network errors and timeouts too, so a
// script whose reply timed out would be sent again, and charged twice),
// and the slot map reloaded at least every DefaultClusterStateReload.
// Addrs, credentials, TLS and pool size (per server) are kept as given.
//
// A Store does not need it: it takes only the connection settings of the
// Cluster client it is given, whatever its other options, routes the
// commands itself and bounds its own connections (cluster.go).
func BoundClusterOptions(o *redis.ClusterOptions) *redis.ClusterOptions {
	c := *o
	c.ContextTimeoutEnabled = true
	c.MaxRetries = -1
	c.DialTimeout = bound(c.DialTimeout, DefaultDialTimeout)
	c.ReadTimeout = bound(c.ReadTimeout, DefaultReadTimeout)
	c.WriteTimeout = bound(c.WriteTimeout, DefaultWriteTimeout)
	c.PoolTimeout = bound(c.PoolTimeout, DefaultPoolTimeout)
	c.DialerRetries = 1
	c.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	c.DisableIdentity = true
	c.MaxRedirects = -1
	c.ClusterStateReloadInterval = bound(c.ClusterStateReloadInterval, DefaultClusterStateReload)
	return &c
}

// BoundFailoverOptions is BoundOptions for a Sentinel group's client
// (redis.NewFailoverClient): the same timeouts and no retries, for the
// connections to the master; the sentinels are asked as go-redis does.
func BoundFailoverOptions(o *redis.FailoverOptions) *redis.FailoverOptions {
	c := *o
	c.ContextTimeoutEnabled = true
	c.MaxRetries = -1
	c.DialTimeout = bound(c.DialTimeout, DefaultDialTimeout)
	c.ReadTimeout = bound(c.ReadTimeout, DefaultReadTimeout)
	c.WriteTimeout = bound(c.WriteTimeout, DefaultWriteTimeout)
	c.PoolTimeout = bound(c.PoolTimeout, DefaultPoolTimeout)
	c.DialerRetries = 1
	c.DisableIdentity = true
	return &c
}

// ParseAddr reads a node address: "host:port", or a redis:// or rediss://
// URL (user, password, database, TLS; go-redis's redis.ParseURL), into
// options for NewClient and the name the node goes by: "host:port", with
// "/db" after it for a database other than 0. The name never holds the
// credentials.
func ParseAddr(addr string) (*redis.Options, string, error) {
	if !strings.Contains(addr, "://") {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, "", fmt.Errorf("remote: address %q: %w", addr, err)
		}
		return &redis.Options{Addr: addr}, addr, nil
	}
	o, err := redis.ParseURL(addr)
	if err != nil {
		// The error of ParseURL may quote the URL, password included.
		return nil, "", fmt.Errorf("remote: address %s: not a valid redis:// or rediss:// URL", redactURL(addr))
	}
	name := o.Addr
	if o.DB != 0 {
		name += "/" + strconv.Itoa(o.DB)
	}
	return o, name, nil
}

// redactURL is addr with anything between "://" and "@" replaced.
func redactURL(addr string) string {
	i := strings.Index(addr, "://")
	j := strings.LastIndex(addr, "@")
	if i < 0 || j < i {
		return addr
	}
	return addr[:i+3] + "…" + addr[j:]
}
