package shard

import (
	"fmt"
	"math"
)

// Defaults for the zero fields of [Config]. They were chosen by measuring,
// over 200 random sets of four node names and 100,000 keys, how many keys
// move when a node joins or leaves and how evenly three nodes share the keys
// (TestConfigSweep; the figures below are its output).
const (
	// DefaultPartitionCount is a prime: keys are spread over partitions by
	// xxhash64(key) mod PartitionCount, and partitions are the unit of
	// ownership. 7919 partitions make the rounding of partitions to nodes
	// negligible (under 0.1% of keys per partition with 3 nodes) while a
	// ring still builds in a few milliseconds.
	DefaultPartitionCount = 7919

	// DefaultReplicationFactor is the number of points each node gets on
	// the hash circle. With few nodes, the usual case for Redis nodes,
	// consistent's default of 20 points left the largest of three nodes
	// with up to 2.28 times the keys of the smallest, moved up to 37.6% of
	// keys when a fourth node joined, and moved up to 8.3% of all keys
	// between nodes that stayed when one of four left (the load bound
	// binding). With 200 points: at most 1.47 times (1.13 on average),
	// 20.5-30.3% moved, and no key of a node that stayed ever moved.
	// More points cost only rebuild time.
	DefaultReplicationFactor = 200

	// DefaultLoad is the bound of consistent hashing with bounded loads: no
	// node owns more than ceil(floor(PartitionCount/nodes) * Load)
	// partitions.
	DefaultLoad = 1.25

	// MaxNameLen is the longest node name, in bytes.
	MaxNameLen = 256

	maxPartitionCount    = 1 << 20
	maxReplicationFactor = 1000
)

// Config tunes a [Ring]. A zero field means its default. A Ring's Config
// cannot change: every process that routes the same keys must use the same
// Config and the same node names to agree on where keys live.
type Config struct {
	// PartitionCount is the number of partitions. A key belongs to partition
	// xxhash64(key) mod PartitionCount, whatever the membership; a membership
	// change reassigns partitions, not keys, so it is also the granularity of
	// balance and of movement. A ring can hold at most PartitionCount nodes.
	// Changing it re-routes almost every key. Between 1 and 1<<20; 0 means
	// DefaultPartitionCount (7919).
	PartitionCount int

	// ReplicationFactor is the number of points (virtual nodes) each node
	// gets on the hash circle. More points spread partitions more evenly
	// and make the share of keys that moves on a change closer to the ideal
	// 1/nodes, at the cost of a slower rebuild. Between 2 and 1000 (with one
	// point, consistent cannot place the partitions of a one-node ring); 0
	// means DefaultReplicationFactor (200).
	ReplicationFactor int

	// Load bounds the partitions a node may own to
	// ceil(floor(PartitionCount/nodes) * Load). Closer to 1 balances more
	// tightly but, once the bound binds, moves keys between nodes that did not
	// change; at exactly 1 most memberships cannot be built ([ErrRing]). At
	// least 1 and finite; 0 means DefaultLoad (1.25).
	Load float64
}

// withDefaults returns cfg with its zero fields set to their defaults.
func (cfg Config) withDefaults() Config {
	if cfg.PartitionCount == 0 {
		cfg.PartitionCount = DefaultPartitionCount
	}
	if cfg.ReplicationFactor == 0 {
		cfg.ReplicationFactor = DefaultReplicationFactor
	}
	if cfg.Load == 0 {
		cfg.Load = DefaultLoad
	}
	return cfg
}

// validate checks a Config whose defaults are filled in.
func (cfg Config) validate() error {
	// consistent converts PartitionCount to uint64: a negative count would
	// make it loop over 2^64 partitions.
	if cfg.PartitionCount < 1 || cfg.PartitionCount > maxPartitionCount {
		return fmt.Errorf("%w: PartitionCount %d is not in [1, %d] (0 means %d)",
			ErrInvalidConfig, cfg.PartitionCount, maxPartitionCount, DefaultPartitionCount)
	}
	if cfg.ReplicationFactor < 2 || cfg.ReplicationFactor > maxReplicationFactor {
		return fmt.Errorf("%w: ReplicationFactor %d is not in [2, %d] (0 means %d)",
			ErrInvalidConfig, cfg.ReplicationFactor, maxReplicationFactor, DefaultReplicationFactor)
	}
	if math.IsNaN(cfg.Load) || math.IsInf(cfg.Load, 0) || cfg.Load < 1 {
		return fmt.Errorf("%w: Load %v is not a finite number >= 1 (0 means %v)",
			ErrInvalidConfig, cfg.Load, DefaultLoad)
	}
	return nil
}
