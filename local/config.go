package local

import (
	"fmt"
	"time"
)

// Defaults and bounds of Config.
const (
	// DefaultMaxKeys is the default of Config.MaxKeys.
	DefaultMaxKeys = 1_000_000
	// DefaultShards is the default of Config.Shards.
	DefaultShards = 256
	// MaxShards is the largest Config.Shards accepted.
	MaxShards = 1 << 16

	// minPerShard is the fewest entries a shard is given when MaxKeys
	// allows: a request for one key with up to this many limits always fits
	// in its shard.
	minPerShard = 16
)

// Config configures a Limiter. The zero value is ready to use: every zero
// field means its documented default.
type Config struct {
	// MaxKeys bounds the memory of the Limiter: the number of entries it
	// keeps, one per (key, limit) pair, so a key checked against a per-minute
	// and a per-hour limit takes two. When full, inserting an entry first
	// drops expired entries and otherwise evicts the least recently used of
	// a small sample; an evicted key forgets its state and looks fresh
	// (a full bucket, an empty window) the next time it is seen.
	// An entry takes 192 bytes and its place in its shard's index about
	// 34 more, plus its key when longer than 48 bytes. Default 1_000_000
	// (DefaultMaxKeys), about 225 MB at most.
	MaxKeys int

	// Shards is the number of independently locked parts the keys are
	// spread over, by a hash of the key: more shards, less contention
	// between goroutines deciding different keys. At most MaxShards
	// (65536). It is rounded up to a power of two, then lowered (to a power
	// of two, at least 1) so that every shard holds at least 16 entries of
	// MaxKeys. Default 256 (DefaultShards).
	Shards int

	// Now returns the current time. Allow, AllowN, Lease, Peek, Refund,
	// GiveBack and Sweep call it once per call, from the caller's goroutine
	// and never under a lock, so it must be safe for concurrent use. Tests
	// inject a fixed or stepped clock here. Default: the wall clock read by New,
	// advanced by the monotonic clock (cheaper than time.Now, and immune to
	// steps of the wall clock).
	Now func() time.Time
}

// withDefaults returns a copy of c with defaults filled in and Shards
// adjusted, or an error naming the first invalid field.
func (c Config) withDefaults() (Config, error) {
	if c.MaxKeys < 0 {
		return c, fmt.Errorf("local: Config.MaxKeys %d is negative (0 means the default, %d)", c.MaxKeys, DefaultMaxKeys)
	}
	if c.Shards < 0 {
		return c, fmt.Errorf("local: Config.Shards %d is negative (0 means the default, %d)", c.Shards, DefaultShards)
	}
	if c.Shards > MaxShards {
		return c, fmt.Errorf("local: Config.Shards %d is above %d", c.Shards, MaxShards)
	}
	if c.MaxKeys == 0 {
		c.MaxKeys = DefaultMaxKeys
	}
	if c.Shards == 0 {
		c.Shards = DefaultShards
	}
	n := 1
	for n < c.Shards {
		n <<= 1
	}
	for n > 1 && c.MaxKeys/n < minPerShard {
		n >>= 1
	}
	c.Shards = n
	return c, nil
}
