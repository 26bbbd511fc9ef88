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
// single server ([Store.DecideMany]), one pipeline of script calls on a
// Cluster, which the client splits by master ([Store.DecidePipeline]), each
// request's outcome its own. [Store.GiveBack] returns what a lease did not use.
//
// Scripts run by EVALSHA; a node that lost its script cache (a restart, a
// SCRIPT FLUSH) answers NOSCRIPT, and the store loads the script and sends
// again, in pipelines and multi-key calls too. A script that did not run is
// never charged, so that resend is safe; nothing else is retried, because a
// script that timed out may have run. Clients built by [NewClient] or
// [BoundOptions] never retry; nothing of ours runs on a new connection.
//
// Keys are "<prefix>{<key>}:<algorithm>:<rate>:<period>[:<burst>]" (a named
// limit's "<prefix>{<key>}:@<algorithm>:<name>"), the key with '%', '{' and
// '}' percent-encoded, so all the keys of one user key share a hash tag and
// live on one node (and one Redis Cluster slot), whatever bytes it holds.
// Every write sets a TTL: a key lives only while its state differs from a
// fresh one. A token bucket is a single integer.
package remote
