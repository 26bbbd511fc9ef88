// Package remote decides rate limits on Redis: one Lua script per algorithm
// (scripts/*.lua) mirrors package limit exactly, timed by the Redis server's
// own clock (TIME), never the caller's.
//
// A [Store] wraps one Redis node (a single server, a Sentinel group or a
// Redis Cluster). A [Request] is validated once, when it is built: a
// decision of n units, all or nothing ([NewDecision]), or a lease of up to
// n units, as many as every limit admits now ([NewLease]). [Store.Decide]
// sends one request in one script call; [Store.DecideBatch] sends many in
// one round trip, the way the client needs: one multi-key script call on a
// single server ([Store.DecideMany]), one pipeline of script calls per
// master on a Cluster ([Store.DecidePipeline]), each request's outcome its
// own. [Store.GiveBack] returns what a lease did not use.
//
// On a Redis Cluster the Store routes its commands itself: of the
// *redis.ClusterClient it is given it takes the connection settings, then
// keeps the slot map (CLUSTER SLOTS) and a bounded client of its own per
// master, which [Store.Close] releases. It follows MOVED, ASK and
// TRYAGAIN within the request's budget (Redis did not run the script when
// it sent them), never a network error or a timeout, and reloads the map
// after failures ([Store.Refresh]). CLUSTERDOWN, and a move that outlasts
// the budget, fail the request with [ErrCluster]. [Store.Caveats] names
// the options of the client it cannot work around.
//
// The Lua code runs as a function library (FUNCTION LOAD once, then FCALL)
// where the node has functions (Redis 7 and later), so that Redis builds
// it once rather than at every call; elsewhere (Redis 6, miniredis, an ACL
// user who may not load functions) as scripts by EVALSHA. [Store.Load]
// chooses, and [Store.Functions] tells. A node that lost its code (a
// restart without persistence, a FUNCTION FLUSH or SCRIPT FLUSH) answers
// "Function not found" or NOSCRIPT, and the store loads it and sends
// again, in pipelines and multi-key calls too. A call that did not run is
// never charged, so that resend is safe; nothing else is retried, because
// a call that timed out may have run. Clients built by [NewClient] or
// [BoundOptions] never retry; nothing of ours runs on a new connection.
//
// A multi-key decide call sends each set of limits once and each request
// as its keys and one integer naming its set and cost, and a decision
// against one token bucket is answered in three or four integers, not
// six: most of a batch's arguments and replies were limits repeated and
// zeros.
//
// Keys are "<prefix>{<key>}:<algorithm>:<rate>:<period>[:<burst>]" (a named
// limit's "<prefix>{<key>}:@<algorithm>:<name>"), the key with '%', '{' and
// '}' percent-encoded, so all the keys of one user key share a hash tag and
// live on one node (and one Redis Cluster slot), whatever bytes it holds.
// Every write sets a TTL: a key lives only while its state differs from a
// fresh one. A token bucket is a single integer.
//
// That is the default [Layout]. The compact one (Layout.Compact) keeps the
// state of a token bucket, leaky bucket, fixed window or sliding-window
// counter as a field, named by the user key (or its digest, for a key
// longer than 64 bytes), of a hash shared by the keys
// of one bucket (xxhash64 of the key, modulo Layout.Keys/[KeysPerHash]):
// "<prefix>{{c1#<bucket>}:<algorithm>:<rate>:<period>[:<burst>]:<g>", one
// hash per bucket, limit and parity of the generation g, a generation
// being the states' longest life rounded up to whole hours on the
// server's clock. A request's keys share the bucket's tag, so its slot. It
// costs about a quarter of the memory (61.6 B for a client of 100/min and
// 1000/hour at ten million clients, 257 B in keys of their own) and keeps
// a state until the end of the generation after its write;
// scripts/compact.lua has the walkthrough, layout.go the measurements
// behind KeysPerHash, and docs/capacity.md when to choose which.
package remote
