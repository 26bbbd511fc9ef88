// Package hybrid is the limiter services import: one shared rate limit per
// client across all the instances of a service, decided on Redis.
//
//	lim, err := hybrid.New(hybrid.Config{Addrs: []string{"10.0.0.1:6379", "10.0.0.2:6379"}})
//	defer lim.Close()
//	res, err := lim.Allow(ctx, "user:42", hybrid.PerMinute(100))
//	res, err = lim.AllowN(ctx, "user:42", 5, hybrid.PerMinute(100), hybrid.PerHour(1000))
//	err = lim.Wait(ctx, "user:42", hybrid.PerSecond(10))
//
// Keys are routed by a consistent-hash ring over independent Redis nodes
// (package shard), so adding a node moves only about 1/N of the keys. Each
// decision is one atomic Lua script on the node that owns the key, timed by
// that node's clock (package remote), with all of a request's limits
// checked and charged together: a denial by any charges none.
//
// One budget bounds each call, whatever path it takes: AllowN returns by
// Config.Timeout after it was called (or by ctx's deadline), and at once
// when ctx ends while its request waits for a round trip or is carried by
// one (a caller that makes its idle node's round trip itself sees ctx's end
// when the round trip ends, within the budget). A slow node is not a dead
// one: the round trips in flight to a node grow with its latency
// (Batch.MaxInFlight), so a node that answers within Timeout keeps its keys.
// Each node has a circuit breaker (package breaker): after
// Breaker.ConsecutiveFailures failures in a row, or Breaker.FailureRatio of
// its recent calls, it opens, and the node's keys are answered in process,
// with no remote attempt, until a probe after Breaker.OpenTimeout succeeds.
// A Redis Cluster node has a breaker per master instead, so one failed
// master sends only its own keys to the failure mode, and its promoted
// replica takes them back as soon as the slot map names it; a reshard, a
// master added or a manual failover are routing (MOVED, ASK, TRYAGAIN,
// followed within the budget), not failures, whatever options the cluster
// client was built with. New returns ErrMisconfigured for a node that
// refuses the scripts for a password, ACL or TLS reason. How the failing
// keys are answered is Config.OnFailure: Fallback (in-process buckets of
// package local, each limit scaled by FallbackShare), FailOpen or
// FailClosed. Redis errors never reach the caller; Result.Source says what
// decided, and Stats counts it, with every answer Redis did not decide
// counted by Reason.
//
// Bad input — an empty key or one over 512 bytes, an invalid limit, a cost
// below 1 or above a limit's capacity — returns an error and consumes
// nothing.
package hybrid
