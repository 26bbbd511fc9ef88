// Package local is an in-process keyed rate limiter: for each key (a user, an
// API token, a client address) it enforces one or more limits of package
// limit, with bounded memory and without starting goroutines. It is usable
// alone as a fast limiter for a single instance, and it is what package
// hybrid falls back to when Redis cannot be reached.
//
// # Deciding
//
// A Limiter is created once with New and shared:
//
//	l, err := local.New(local.Config{})          // up to 1,000,000 entries
//	d, err := l.Allow("user:42", limit.PerMinute(100))
//	if err != nil { ... }                        // bad input only
//	if !d.Allowed { retry after d.RetryAfter }
//
// AllowN charges a cost of several units. Several limits in one call (for
// example 10 per second and 1000 per hour) are decided together under one
// lock: the request is admitted only when all of them admit it, and then
// charged to all; a denied request consumes nothing. The Decision is that of
// the binding limit, and AllowAt also returns its index. A key's state is
// kept per limit in its canonical form (limit.Limit.Canonical), so
// PerSecond(10) and a Limit with an explicit Burst of 10 share it. Denial is
// data, not an error: errors report bad input (an empty key, an invalid
// limit, a limit given twice, a cost below 1 or above a limit's capacity),
// which consumes nothing.
//
// The decisions are package limit's, exactly: a Limiter runs the
// transitions limit.Take runs, so the same request sequence gives the same
// Decisions here, from limit.Take and (within a millisecond) on Redis, as
// the shared conformance vectors check.
//
// # Storage
//
// A Limiter keeps one entry per (key, limit) pair: the limit's state for that
// key and the limit's integer form (time quantum, period, rate, capacity),
// computed once when the entry is created, by which the entry is found.
// Entries are spread over Config.Shards shards by a hash of the key
// (hash/maphash, seeded per Limiter), each with its own mutex and index, so the limits of one key
// share a shard and one lock, and different keys rarely contend. A shard's
// index (open addressing by the key's hash) holds the first of the key's
// entries, which are chained. An entry is 192 bytes, keys of up to 48 bytes
// included, and a decision reads two of its cache lines. Each shard also
// remembers the entry of its latest single-limit request, so a hot key is
// found without an index lookup. Deciding for a key already present
// allocates nothing.
//
// # Expiry and eviction
//
// From an entry's state the Limiter tells the instant from which it decides
// exactly as a fresh one would (the entry is then expired):
//
//   - TokenBucket, LeakyBucket: when the charged units have drained;
//   - FixedWindow: the end of the charged window;
//   - SlidingWindowCounter: the end of the window after it, which the charged
//     window still weighs on;
//   - SlidingWindowLog: when the newest event leaves the window.
//
// An expired entry may be dropped at any time, with no effect on decisions
// unless the clock is later set back before its expiry. Entries are dropped
//
//   - a few at a time as others are inserted: each insert examines two
//     entries of its shard and drops those expired for at least a minute or
//     a period of their limit, whichever is longer (so that a key coming back
//     soon keeps its entry);
//   - all at once by Sweep, which a caller may run now and then to return
//     memory after a burst of keys;
//   - when memory is full (see below).
//
// Memory is bounded: there are never more than Config.MaxKeys entries (192
// bytes each, about 34 more for their place in the index, plus keys longer
// than 48 bytes), spread evenly over the shards.
// Inserting into a full shard samples eight of its entries and drops the
// expired ones among them or, when none is, the least recently used.
// Eviction forgets state: an evicted key looks fresh the next time it is
// seen (a full bucket, an empty window), so a flood of new keys larger than
// MaxKeys can let the evicted ones through again. Size MaxKeys for the
// (key, limit) pairs active within a period of your longest limit.
//
// # Leases, peeks, refunds and resets
//
// Lease charges up to a number of units at once, as many as every limit
// admits (package hybrid's AllowAtMost uses it when its node cannot answer);
// GiveBack returns a lease's unused units. Peek answers what AllowN of one
// unit would, charging nothing; Refund gives units back now, whenever they
// were taken; Reset forgets a key's state. hybrid's fallback buckets use
// the last three as hybrid's own Peek, Refund and Reset do on Redis.
//
// # Time
//
// The Limiter reads Config.Now once per call, in microseconds (by default
// the wall clock read by New, advanced by the monotonic clock); AllowAt and
// LeaseAt take the instant from the caller instead.
// Time that goes backwards is handled as package limit documents.
//
// A Limiter is safe for concurrent use by multiple goroutines. It holds no
// goroutine or other resource, so there is nothing to close.
package local
