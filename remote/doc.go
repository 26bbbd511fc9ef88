// Package remote decides rate limits on Redis: one Lua script per algorithm
// (scripts/*.lua) mirrors package limit exactly, timed by the Redis server's
// own clock (TIME), never the caller's.
//
// A [Store] wraps one Redis node. [Store.Decide] decides one request for one
// key against one or more limits in one script call, all or nothing;
// [Store.DecideMany] decides many independent keys owned by the node in one
// round trip; [Store.DecidePipeline] does the same as one pipeline of
// EVALSHA calls (for Redis Cluster, where keys of different users live in
// different slots). [Store.Lease] takes a batch of units atomically and
// [Store.GiveBack] returns what was not used.
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
// live on one node (and one Redis Cluster slot), whatever bytes it holds. Every write sets a TTL: a key lives only while its
// state differs from a fresh one. A token bucket is a single integer.
package remote
