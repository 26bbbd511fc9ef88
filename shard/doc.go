// Package shard maps keys to named nodes with a consistent-hash ring, so that
// a change of membership moves few keys. It knows nothing of Redis: a node is
// a name, and the caller keeps whatever a name stands for.
//
// The ring is github.com/buraksezer/consistent (consistent hashing with
// bounded loads) hashed with xxhash64. It works in two steps:
//
//   - A key belongs to partition xxhash64(key) mod PartitionCount. That never
//     changes: a membership change reassigns partitions, not keys.
//   - Each node is placed at ReplicationFactor points on a hash circle, and
//     each partition is given to the node at the first point after the
//     partition's own hash, skipping nodes that already own
//     ceil(floor(PartitionCount/nodes) * Load) partitions. Owners are
//     computed when the membership changes, so a lookup is a hash, a modulo
//     and a table read.
//
// Create a ring with the nodes' names, and ask it where a key lives:
//
//	ring, err := shard.New(shard.Config{}, "redis-a:6379", "redis-b:6379", "redis-c:6379")
//	if err != nil {
//		return err
//	}
//	node, ok := ring.Locate("user:42") // "redis-b:6379", true
//
// Locate reports ok == false only when the ring has no members. LocateBytes
// does the same for a []byte key. Neither allocates, locks or blocks.
//
// Change the membership at run time with Add, Remove, or Set, which replaces
// it:
//
//	err = ring.Add("redis-d:6379")    // about a quarter of the keys move to redis-d
//	err = ring.Remove("redis-b:6379") // redis-b's keys move; the others stay
//	err = ring.Set("redis-a:6379", "redis-c:6379")
//
// # Same names, same routing
//
// Every change builds the new ring from scratch, from the sorted list of
// names, then swaps it in. So the routing depends only on the Config and the
// set of names, never on the order in which they were added or on the history
// of changes: every process that is told the same set routes every key to the
// same node. Changing the Config (or this package's hashing) re-routes keys
// and must reach every process at once.
//
// # Failed changes
//
// A change that fails returns an error wrapping [ErrInvalidName],
// [ErrUnknownNode] or [ErrRing], and leaves the ring exactly as it was:
// readers never see a partial change. No input makes the package panic.
//
// # What this guards against in consistent v0.10.0
//
// Read in its source:
//
//   - It panics with "not enough room to distribute partitions" when the
//     partitions do not fit under the load bound: more members than
//     partitions, a Load of 1 with a member count that does not divide the
//     partition count, one point per member, or an empty non-nil member
//     list. Its Add panics after it has already inserted the member, leaving
//     its ring half-updated. This package builds each ring aside, under
//     recover, checks that every partition has an owner among the intended
//     members before publishing it, and returns [ErrRing] otherwise.
//   - It names the virtual nodes of a member member.String() followed by the
//     replica number, so "node1" replica 12 and "node11" replica 2 are both
//     "node112". The member added later silently takes the point: the
//     routing then depends on the order of addition, and consistent's own
//     Remove dereferences a nil member. This package gives consistent each
//     name followed by '#', which cannot collide: in "name#12", the last '#'
//     ends the name.
//   - A negative PartitionCount becomes a huge unsigned count and
//     consistent loops over it; [Config] rejects it.
//   - Its LocateKey takes a read lock and, through its Hasher interface,
//     makes the key escape to the heap. This package copies the partition
//     table out of each ring it builds and looks keys up in the copy:
//     about 8 ns and no allocation against about 75 ns and one allocation,
//     and it scales across cores (go test -run '^$' -bench . -cpu 1,2
//     ./shard/).
//
// # Choosing the configuration
//
// The defaults (7919 partitions, 200 points per node, Load 1.25) come from
// measuring, over 200 random sets of four node names and 100,000 keys, the
// share of keys that moves when a fourth node joins three (ideal: 1/4), the
// keys of the other nodes that move when one of four leaves (ideal: none),
// and max/min keys per node among three (ideal: 1):
//
//	partitions points load   moved on join     others' keys moved   max/min keys
//	                         min   avg   max   on leave (max)       avg   max
//	7919       20     1.25   .155  .255  .376  8253                 1.43  2.28
//	7919       100    1.25   .192  .250  .313  598                  1.20  1.67
//	7919       200    1.25   .205  .252  .303  0                    1.13  1.47
//	7919       200    1.1    .212  .252  .308  1246                 1.12  1.30
//	271        200    1.25   .176  .249  .309  1810                 1.26  1.74
//
// Few nodes need many points for an even split; once the split is even, the
// load bound stops binding and changes move no key between nodes that
// stayed. A ring of 4 to 16 nodes builds in 4 to 9 ms; consistent re-sorts
// every point for each node it adds, so the time grows with the square of the
// node count (40 ms at 64 nodes, 0.8 s at 256). To reproduce the table:
//
//	go test -run TestConfigSweep -v -timeout 30m ./shard/ -args -shard.sweep
//
// # Concurrency
//
// A [Ring] is safe for concurrent use. Readers load an immutable snapshot
// through an atomic pointer; writers are serialized by a mutex that readers
// never take, build the next snapshot aside, and publish it in one store.
package shard
