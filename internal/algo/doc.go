// Package algo is the integer representation of hybridlimit's limits and
// the transitions of its five algorithms, shared by package limit (the
// public pure decision), package local (the in-process store), package
// remote (the algorithms' codes in its keys, a Spec's integers as its
// scripts' arguments, and the differential tests of its Lua scripts),
// and the conformance suite; package limit's exported methods carry what
// other modules need of it (a LeakyBucket's longest Delay, for the rules of
// httplimit and grpclimit: limit.Limit.LongestDelay).
//
// A limit is reduced to its [Spec]: a time quantum Q in microseconds, the
// period P in quanta, the rate R and the capacity C, chosen so that every
// product a transition forms stays below 2^53 and the Lua scripts of
// package remote, whose numbers are IEEE doubles, compute bit-for-bit the
// same decisions. The [State] of one limit for one key is a few integers
// whose meaning depends on the algorithm and on P. Both may change from one
// version to the next: nothing outside this module sees them.
//
// Each algorithm is one file, as each is one Lua file in remote/scripts:
// token_bucket.go, leaky_bucket.go, fixed_window.go, sliding_window_log.go
// and sliding_window_counter.go each define the algorithm's names and its
// transitions (look, avail, allows, decide, commit, giveBack, refund: the
// functions its Lua table holds) and idleAt, when a store may forget a
// state (Redis expires keys instead). leaky_bucket.go defines only its
// decide and takes the token bucket's other functions, as
// leaky_bucket.lua reuses TB's. The generic code in take.go
// (one limit, several limits all or nothing, leases, peeks, give-backs and
// refunds) and convert.go reaches them through dispatch.go, which only
// routes; the token bucket's fast path, the most common decision, is taken
// before any routing (see [Spec.TakeTo]).
//
// This package imports nothing of the module: package limit builds on it,
// and package limitspec turns a limit.Limit into its Spec.
package algo
