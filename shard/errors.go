package shard

import "errors"

var (
	// ErrInvalidConfig reports a [Config] field out of range. The wrapped
	// message names the field and its range.
	ErrInvalidConfig = errors.New("shard: invalid config")

	// ErrInvalidName reports a node name that cannot join the ring: empty,
	// longer than [MaxNameLen] bytes, already a member, or given twice in one
	// call. The ring is left as it was.
	ErrInvalidName = errors.New("shard: invalid node name")

	// ErrUnknownNode reports a Remove of a name that is not a member. The ring
	// is left as it was.
	ErrUnknownNode = errors.New("shard: unknown node")

	// ErrRing reports a membership for which no ring can be built with the
	// Ring's Config: buraksezer/consistent panicked (it does, with "not enough
	// room to distribute partitions", when the partitions do not fit under the
	// load bound: more members than partitions, or a Load of 1 with a member
	// count that does not divide PartitionCount), or it built a ring that
	// failed validation. The ring is left as it was.
	ErrRing = errors.New("shard: cannot build ring")
)
