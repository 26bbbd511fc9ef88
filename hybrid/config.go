package hybrid

import (
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hybridlimit/hybridlimit/breaker"
	"github.com/hybridlimit/hybridlimit/local"
	"github.com/hybridlimit/hybridlimit/remote"
)

// DefaultTimeout bounds each remote call when Config.Timeout is 0.
const DefaultTimeout = 50 * time.Millisecond

// DefaultMaxLocalKeys is the default of Config.MaxLocalKeys, package
// local's.
const DefaultMaxLocalKeys = local.DefaultMaxKeys

// MaxKeyLen is the longest key accepted, in bytes.
const MaxKeyLen = remote.MaxKeyLen

// MaxLimits is the most limits one request may carry.
const MaxLimits = remote.MaxLimits

// FailureMode says how a request is answered when its node cannot decide.
type FailureMode uint8

const (
	// Fallback (the default) decides in process, enforcing each limit ×
	// FallbackShare per instance.
	Fallback FailureMode = iota
	// FailOpen allows every request.
	FailOpen
	// FailClosed denies every request, with RetryAfter the breaker's
	// OpenTimeout.
	FailClosed
)

// String returns the mode's name: "Fallback", "FailOpen" or "FailClosed".
func (m FailureMode) String() string {
	switch m {
	case Fallback:
		return "Fallback"
	case FailOpen:
		return "FailOpen"
	case FailClosed:
		return "FailClosed"
	}
	return fmt.Sprintf("FailureMode(%d)", uint8(m))
}

// Node is one Redis node of the ring. Any go-redis client works: AUTH, TLS,
// Sentinel (redis.NewFailoverClient), or a Redis Cluster client (then the
// node is the whole cluster, and keys of one user share one slot by their
// hash tag; the Limiter takes the client's connection settings and routes
// over connections of its own to each master, closed by Close).
type Node struct {
	// Name places the node on the ring. Every instance must use the same
	// names for the same nodes: routing depends on the names only.
	Name string
	// Client talks to the node. The Limiter does not close it. For bounded
	// calls build it with remote.BoundOptions (no retries, short timeouts).
	Client redis.UniversalClient
}

// BreakerConfig configures each node's circuit breaker.
type BreakerConfig struct {
	// ConsecutiveFailures opens the breaker: that many remote calls failing
	// in a row (our Timeout expiring counts; the caller's own cancellation
	// does not). Default DefaultConsecutiveFailures.
	ConsecutiveFailures uint32
	// FailureRatio also opens the breaker: once 20 calls were made in the
	// last 10 s, a failure that brings the share of failed calls to this
	// ratio opens it (a node whose connections are cut after a few
	// replies fails often, but rarely five times in a row). In (0, 1].
	// Default breaker.DefaultFailureRatio (0.5).
	FailureRatio float64
	// OpenTimeout is how long an open breaker answers every request
	// locally before letting a probe through. Default DefaultOpenTimeout.
	OpenTimeout time.Duration
	// HalfOpenProbes is how many probes must succeed to close it again.
	// Default DefaultHalfOpenProbes.
	HalfOpenProbes uint32
}

// The breaker's defaults, package breaker's.
const (
	DefaultConsecutiveFailures = breaker.DefaultConsecutiveFailures
	DefaultOpenTimeout         = breaker.DefaultOpenTimeout
	DefaultHalfOpenProbes      = breaker.DefaultHalfOpenProbes
)

// LeaseConfig configures leases: a (key, limits) this instance sees more
// than WarmRate times a second (HotRate when its lease could hold only a
// unit or two) is served from units taken from Redis in batches and spent
// in process (SourceLease). The limit can then be exceeded
// by at most the units outstanding in leases (Stats.LeaseUnits). A key over
// its limit keeps a lease that waits for the refill, and is denied in
// process meanwhile. LeakyBucket limits are leased as places in the queue,
// each request held for its place's Delay.
type LeaseConfig struct {
	// Disable sends every request to Redis.
	Disable bool
	// HotRate is the requests per second, on this instance, above which a
	// key whose lease may hold from 2 to 7 units is leased (one whose lease
	// may hold 8 or more is leased from WarmRate). Default DefaultHotRate.
	HotRate float64
	// WarmRate is the lower rate above which a key is leased when its
	// lease may hold a few units (MaxFraction of its smallest capacity is
	// at least 8): a batch then serves several requests. Below that a
	// lease of a unit or two saves nothing, and only HotRate applies.
	// Default DefaultWarmRate; above HotRate it is HotRate.
	WarmRate float64
	// MaxFraction caps what one instance's lease holds at this fraction
	// of the smallest capacity of the request's limits, rounded down, for
	// every algorithm; a key whose lease could hold fewer than 2 units is
	// not leased. It bounds both what the limit may be exceeded by and
	// what leases withhold from the other instances: with 4 instances, 4%
	// of the limit each way at DefaultMaxFraction, 0.01, and limits of a
	// capacity under 200 are decided by Redis request by request.
	MaxFraction float64
	// RenewEvery sizes a batch to about this much of the key's recent
	// demand on this instance. Default DefaultRenewEvery.
	RenewEvery time.Duration
	// TTL ends a lease (its unused units are given back); a FixedWindow
	// lease also ends with its window. Default DefaultLeaseTTL.
	TTL time.Duration
}

// The lease defaults. How DefaultWarmRate was chosen, with its figures on
// Zipf traffic, is in DESIGN-NOTES ("Warm keys are leased too").
const (
	DefaultHotRate     = 200
	DefaultWarmRate    = 25
	DefaultMaxFraction = 0.01
	DefaultRenewEvery  = 50 * time.Millisecond
	DefaultLeaseTTL    = time.Second
)

// BatchConfig configures batching: while round trips to a node are in
// flight, the requests for that node that arrive wait in its queue, and the
// next round trip decides them all in one script call. A request that
// finds its node idle is sent at once, by its caller.
type BatchConfig struct {
	// Disable sends every request in a round trip of its own (up to the
	// client's pool size in flight at once).
	Disable bool
	// MaxSize caps the requests of one round trip. Default
	// DefaultBatchMaxSize.
	MaxSize int
	// MaxInFlight caps the round trips in flight to one node at once
	// (never more than its client's pool size). A request that has waited
	// Timeout/8 for its turn starts another round trip, so the round trips
	// in flight grow with a node's latency, up to this cap. Default
	// DefaultMaxInFlight. With Disable, the cap is the pool size.
	MaxInFlight int
	// MaxQueue caps the requests waiting for a round trip to one node; one
	// more is answered by the failure mode at once (ReasonQueueFull)
	// instead of waiting out its budget behind a node that cannot keep
	// up. Default DefaultMaxQueue.
	MaxQueue int
}

// The batch defaults: BatchConfig.MaxSize, MaxInFlight and MaxQueue.
// DefaultMaxQueue is far above what a healthy node keeps waiting (a few
// batches: 64 callers on 3 nodes queue about 20 each), and the most that a
// slow one may hold before its callers are answered at once: 4,096
// waiting requests are 64 round trips of 64 with batching on, and with
// batching off as many round trips as the node's connections make in one
// Timeout at 4,096 / (pool × Timeout) a second.
const (
	DefaultBatchMaxSize = 64
	DefaultMaxInFlight  = 8
	DefaultMaxQueue     = 4096
)

// DenyCacheConfig configures the denial cache.
type DenyCacheConfig struct {
	// Disable turns the cache off: every request goes to Redis.
	Disable bool
	// MaxKeys bounds the keys remembered (one denial each; about 300 bytes
	// for a short key, 30 MB at the default, measured by
	// TestMemoryPlateaus). Default DefaultDenyCacheKeys.
	MaxKeys int
}

// DefaultDenyCacheKeys is the default of DenyCacheConfig.MaxKeys.
const DefaultDenyCacheKeys = 100_000

// Config configures a Limiter. The zero value of each field means its
// documented default; Nodes or Addrs must name at least one node.
type Config struct {
	// Nodes are the Redis nodes of the ring, with clients you built.
	Nodes []Node
	// Addrs is shorthand for one node per address, "host:port" or a
	// redis:// or rediss:// URL with user, password, database and TLS
	// (remote.ParseAddr), named by its host:port (and /db), with a client
	// the Limiter builds (remote.BoundOptions, with read and write
	// timeouts of at least Timeout; no retries; scripts loaded by New) and
	// closes.
	Addrs []string
	// Prefix starts every Redis key. Default remote.DefaultPrefix ("rl:").
	Prefix string
	// Layout is how the states are kept in Redis: a key each (the zero
	// Layout, the least Redis CPU), or fields of shared hashes
	// (Layout{Compact: true, Keys: 10_000_000}: about a quarter of the
	// memory, at a stated CPU cost; docs/capacity.md has both, measured).
	// Default: a key each.
	Layout Layout
	// Timeout bounds every remote call, whatever the caller's context
	// allows. Default 50ms: a hung node never holds a request longer.
	Timeout time.Duration
	// OnFailure says how requests are answered while their node cannot
	// decide. Default Fallback.
	OnFailure FailureMode
	// FallbackShare scales each limit enforced in process under Fallback:
	// with N instances, 1/N keeps the total near the limit, 1 (the default)
	// lets each instance admit the whole limit. In (0, 1].
	FallbackShare float64
	// Breaker configures each node's circuit breaker.
	Breaker BreakerConfig
	// MaxLocalKeys bounds the keys the in-process fallback holds, at about
	// 225 bytes each for short keys (225 MB at the default, measured by
	// TestMemoryPlateaus; held only while a node fails). Default
	// DefaultMaxLocalKeys.
	MaxLocalKeys int
	// Batch configures the coalescing of concurrent requests per node.
	Batch BatchConfig
	// Lease configures the serving of hot keys from batches of units
	// leased from Redis.
	Lease LeaseConfig
	// DenyCache configures the local memory of denials: a key Redis denied
	// with RetryAfter d is denied in process for d, with no Redis call.
	DenyCache DenyCacheConfig
	// Logger receives node failures and breaker state changes. Default
	// slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() (Config, error) {
	if len(c.Nodes) == 0 && len(c.Addrs) == 0 {
		return c, fmt.Errorf("%w: Config needs Nodes or Addrs", ErrInvalidNode)
	}
	if c.Timeout < 0 {
		return c, fmt.Errorf("hybrid: negative Timeout %v", c.Timeout)
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if err := c.Layout.Validate(); err != nil {
		return c, fmt.Errorf("hybrid: %w", err)
	}
	if c.OnFailure > FailClosed {
		return c, fmt.Errorf("hybrid: unknown OnFailure %v", c.OnFailure)
	}
	if c.FallbackShare == 0 {
		c.FallbackShare = 1
	}
	if math.IsNaN(c.FallbackShare) || c.FallbackShare <= 0 || c.FallbackShare > 1 {
		return c, fmt.Errorf("hybrid: FallbackShare %v outside (0, 1]", c.FallbackShare)
	}
	b, err := breaker.Config{
		ConsecutiveFailures: c.Breaker.ConsecutiveFailures,
		FailureRatio:        c.Breaker.FailureRatio,
		OpenTimeout:         c.Breaker.OpenTimeout,
		HalfOpenProbes:      c.Breaker.HalfOpenProbes,
	}.WithDefaults("hybrid")
	if err != nil {
		return c, fmt.Errorf("hybrid: Breaker: %w", err)
	}
	c.Breaker = BreakerConfig{ConsecutiveFailures: b.ConsecutiveFailures, FailureRatio: b.FailureRatio, OpenTimeout: b.OpenTimeout, HalfOpenProbes: b.HalfOpenProbes}
	if c.MaxLocalKeys < 0 {
		return c, fmt.Errorf("hybrid: negative MaxLocalKeys %d", c.MaxLocalKeys)
	}
	if c.MaxLocalKeys == 0 {
		c.MaxLocalKeys = DefaultMaxLocalKeys
	}
	if c.Lease.HotRate < 0 || c.Lease.WarmRate < 0 || math.IsNaN(c.Lease.WarmRate) || c.Lease.MaxFraction < 0 || c.Lease.MaxFraction > 1 || c.Lease.RenewEvery < 0 || c.Lease.TTL < 0 || math.IsNaN(c.Lease.HotRate) || math.IsNaN(c.Lease.MaxFraction) {
		return c, fmt.Errorf("hybrid: Lease config out of range: %+v", c.Lease)
	}
	if c.Lease.HotRate == 0 {
		c.Lease.HotRate = DefaultHotRate
	}
	if c.Lease.WarmRate == 0 {
		c.Lease.WarmRate = DefaultWarmRate
	}
	c.Lease.WarmRate = min(c.Lease.WarmRate, c.Lease.HotRate)
	if c.Lease.MaxFraction == 0 {
		c.Lease.MaxFraction = DefaultMaxFraction
	}
	if c.Lease.RenewEvery == 0 {
		c.Lease.RenewEvery = DefaultRenewEvery
	}
	if c.Lease.TTL == 0 {
		c.Lease.TTL = DefaultLeaseTTL
	}
	if c.Batch.MaxSize < 0 {
		return c, fmt.Errorf("hybrid: negative Batch.MaxSize %d", c.Batch.MaxSize)
	}
	if c.Batch.MaxSize == 0 {
		c.Batch.MaxSize = DefaultBatchMaxSize
	}
	if c.Batch.MaxInFlight < 0 {
		return c, fmt.Errorf("hybrid: negative Batch.MaxInFlight %d", c.Batch.MaxInFlight)
	}
	if c.Batch.MaxInFlight == 0 {
		c.Batch.MaxInFlight = DefaultMaxInFlight
	}
	if c.Batch.MaxQueue < 0 {
		return c, fmt.Errorf("hybrid: negative Batch.MaxQueue %d", c.Batch.MaxQueue)
	}
	if c.Batch.MaxQueue == 0 {
		c.Batch.MaxQueue = DefaultMaxQueue
	}
	if c.DenyCache.MaxKeys < 0 {
		return c, fmt.Errorf("hybrid: negative DenyCache.MaxKeys %d", c.DenyCache.MaxKeys)
	}
	if c.DenyCache.MaxKeys == 0 {
		c.DenyCache.MaxKeys = DefaultDenyCacheKeys
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	c.Nodes = append([]Node(nil), c.Nodes...)
	c.Addrs = append([]string(nil), c.Addrs...)
	return c, nil
}
