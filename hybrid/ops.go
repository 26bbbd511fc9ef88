package hybrid

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hybridlimit/hybridlimit/breaker"
	"github.com/hybridlimit/hybridlimit/remote"
)

// Peek answers what Allow would answer for one unit of key now (Allowed,
// Remaining, RetryAfter, ResetAfter), consuming nothing, from the node
// that owns the key. A denial this instance remembers (SourceDenyCache) or
// a lease it holds (SourceLease) answers as Allow would. When the node
// cannot answer, the failure mode does: the fallback buckets are peeked,
// FailOpen answers allowed and FailClosed denied. Peeks are not counted
// in Stats' decisions. The error is non-nil only for bad input or after
// Close.
func (l *Limiter) Peek(ctx context.Context, key string, limits ...Limit) (Result, error) {
	if l.closed.Load() {
		return Result{}, ErrClosed
	}
	req, err := remote.NewDecision(key, 1, limits...)
	if err != nil {
		return Result{}, err
	}
	if l.deny != nil {
		if r, ok := l.deny.get(key, 1, limits); ok {
			return r, nil
		}
	}
	if l.leases != nil {
		if r, ok := l.leases.peek(key, limits); ok {
			return r, nil
		}
	}
	nd := l.locate(key)
	var out remote.Result
	ok, why, err := l.direct(ctx, nd, key, func(ctx context.Context) error {
		out, err = nd.store.Peek(ctx, req)
		return err
	})
	if !ok {
		l.note(nd, why, err)
		switch l.cfg.OnFailure {
		case FailOpen:
			return Result{Allowed: true, Limit: limits[0], Source: SourceFailOpen}, nil
		case FailClosed:
			return Result{Limit: limits[0], RetryAfter: l.cfg.Breaker.OpenTimeout, Source: SourceFailClosed}, nil
		}
		d, b, err := l.fallback.Peek(key, l.scaled(limits)...)
		if err != nil {
			return Result{Limit: limits[0], RetryAfter: limits[0].Period, Source: SourceFallback}, nil
		}
		return result(d, limits, b, SourceFallback), nil
	}
	return result(out.Decision, limits, out.Binding, SourceRemote), nil
}

// AllowAtMost takes as many units for key as all the limits admit together
// now, up to n, on the node that owns the key: Result.Granted says how
// many, and Allowed is true when at least one was taken. n may exceed a
// limit's capacity (the capacity is then the most it grants). It is routed,
// batched, bounded and answered by the failure mode as AllowN is; the
// fallback grants from its buckets, FailOpen grants n, FailClosed none.
// The error is non-nil only for bad input (n below 1, or what AllowN
// refuses; nothing is consumed) or after Close.
func (l *Limiter) AllowAtMost(ctx context.Context, key string, n int64, limits ...Limit) (Result, error) {
	if l.closed.Load() {
		return Result{}, ErrClosed
	}
	req, err := remote.NewLease(key, n, limits...)
	if err != nil {
		return Result{}, err
	}
	if l.deny != nil {
		if r, ok := l.deny.get(key, 1, limits); ok {
			return l.count(r), nil
		}
	}
	nd := l.locate(key)
	if nd == nil {
		return l.failAtMost(nil, ReasonNoNode, nil, key, n, limits), nil
	}
	shard, open := l.breakerFor(nd, key)
	if open {
		return l.failAtMost(nd, ReasonBreakerOpen, nil, key, n, limits), nil
	}
	out, ok, why, err := l.askShard(ctx, nd, req, l.deadline(ctx, time.Now()), shard)
	if !ok {
		return l.failAtMost(nd, why, err, key, n, limits), nil
	}
	r := result(out.Decision, limits, out.Binding, SourceRemote)
	r.Granted, r.Allowed = out.Granted, out.Granted > 0
	if !r.Allowed && l.deny != nil {
		l.deny.put(key, 1, limits, r)
	}
	return l.count(r), nil
}

// failAtMost answers an AllowAtMost its node could not decide.
func (l *Limiter) failAtMost(nd *node, why Reason, err error, key string, n int64, limits []Limit) Result {
	l.note(nd, why, err)
	switch l.cfg.OnFailure {
	case FailOpen:
		return l.count(Result{Allowed: true, Granted: n, Limit: limits[0], Source: SourceFailOpen})
	case FailClosed:
		return l.count(Result{Limit: limits[0], RetryAfter: l.cfg.Breaker.OpenTimeout, Source: SourceFailClosed})
	}
	g, d, b, err := l.fallback.LeaseAt(key, time.Now(), n, l.scaled(limits)...)
	if err != nil {
		return l.count(Result{Limit: limits[0], RetryAfter: limits[0].Period, Source: SourceFallback})
	}
	r := result(d, limits, b, SourceFallback)
	r.Granted, r.Allowed = g, g > 0
	return l.count(r)
}

// Refund gives n units back to each of the limits of key, never above its
// capacity, on the node that owns the key: buckets get them back; a window
// from its current count (a SlidingWindowCounter from the previous
// window's once the current one's is spent); a SlidingWindowLog loses its
// newest n events. This instance's remembered denial for the key is
// dropped. When the node cannot be reached, the units go back to the
// fallback buckets (Fallback mode), and the failure is counted and logged
// as for AllowN, not returned. The error is non-nil only for bad input (n
// below 1, a bad key or limits) or after Close.
func (l *Limiter) Refund(ctx context.Context, key string, n int64, limits ...Limit) error {
	if l.closed.Load() {
		return ErrClosed
	}
	if n < 1 {
		return fmt.Errorf("%w: refund of %d", ErrInvalidCost, n)
	}
	req, err := remote.NewDecision(key, 1, limits...)
	if err != nil {
		return err
	}
	if l.deny != nil {
		l.deny.drop(key)
	}
	nd := l.locate(key)
	ok, why, err := l.direct(ctx, nd, key, func(ctx context.Context) error { return nd.store.Refund(ctx, req, n) })
	if !ok {
		l.note(nd, why, err)
		if l.cfg.OnFailure == Fallback {
			l.fallback.Refund(key, n, l.scaled(limits)...)
		}
	}
	return nil
}

// Reset forgets key's state for the limits: on the node that owns the key
// (one DEL), and in this instance (its lease for the key, whose units go
// with the state reset, or back to the lease's other limits; its
// remembered denial; its fallback buckets). Other instances may still answer from memory for a while:
// from a lease until its units are spent or it is renewed (Lease.RenewEvery,
// at most Lease.TTL), from a remembered denial until its RetryAfter passes.
// When the node cannot be reached, only this instance's state is reset,
// and the failure is counted and logged as for AllowN, not returned. The
// error is non-nil only for bad input or after Close.
func (l *Limiter) Reset(ctx context.Context, key string, limits ...Limit) error {
	if l.closed.Load() {
		return ErrClosed
	}
	req, err := remote.NewDecision(key, 1, limits...)
	if err != nil {
		return err
	}
	if l.deny != nil {
		l.deny.drop(key)
	}
	if l.leases != nil {
		l.leases.reset(key, limits)
	}
	l.fallback.Reset(key, l.scaled(limits)...)
	nd := l.locate(key)
	ok, why, err := l.direct(ctx, nd, key, func(ctx context.Context) error { return nd.store.Reset(ctx, req) })
	if !ok {
		l.note(nd, why, err)
	}
	return nil
}

// scaled is limits as the fallback buckets enforce them: scaled by
// FallbackShare.
func (l *Limiter) scaled(limits []Limit) []Limit {
	if l.cfg.FallbackShare >= 1 {
		return limits
	}
	s := make([]Limit, len(limits))
	for i, lim := range limits {
		s[i] = share(lim, l.cfg.FallbackShare)
	}
	return s
}

// breakerFor returns the breaker of key's Cluster master on a sharded node
// (nil on others, or when the master is not known) and whether the
// breaker that guards key, that one or the node's, is open. While a
// master's is open the slot map is kept fresh (Store.Refresh, at most
// every 100 ms): a replica may be promoted any moment, and the key's next
// request must find the new master and its closed breaker.
func (l *Limiter) breakerFor(nd *node, key string) (*breaker.Breaker, bool) {
	if !nd.sharded {
		return nil, nd.br.Open()
	}
	shard := l.shardOf(nd, key)
	if shard != nil && shard.Open() {
		nd.store.Refresh()
		return shard, true
	}
	return shard, false
}

// direct makes one call fn for key on nd (nil: none), outside the batch:
// through the breaker that guards key and within the call's budget, its
// outcome counted on that breaker. ok is false when nothing answered;
// why (and err, for a failed call) says why.
func (l *Limiter) direct(ctx context.Context, nd *node, key string, fn func(context.Context) error) (ok bool, why Reason, err error) {
	switch {
	case nd == nil:
		return false, ReasonNoNode, nil
	case ctx.Err() != nil:
		return false, ReasonCancelled, nil
	}
	shard, open := l.breakerFor(nd, key)
	if open {
		return false, ReasonBreakerOpen, nil
	}
	sent, err := l.call(l.deadline(ctx, time.Now()), nd, fn)
	c := call{shard: shard}
	switch {
	case !sent:
		c.why = ReasonBreakerOpen
	case err != nil:
		c.why = reasonOf(err)
	default:
		c.ok = true
	}
	l.shardOutcome(nd, &c, sent)
	return c.ok, c.why, err
}

// peek answers a Peek from the key's lease when one with units left is
// held for the same limits: what its next spend would answer.
func (ls *leases) peek(key string, limits []Limit) (Result, bool) {
	v, ok := ls.entries.Load(key)
	if !ok {
		return Result{}, false
	}
	e := v.(*leaseEntry)
	now := ls.now()
	left := e.units.Load()
	if left < 1 || now >= e.expires.Load() || !slices.Equal(e.req.Limits(), limits) {
		return Result{}, false
	}
	b := int(e.binding.Load())
	return Result{Allowed: true, Limit: limits[b], Binding: b, Remaining: min(e.remaining.Load()+left-1, limits[b].Capacity()),
		ResetAfter: time.Duration(max(e.resetAt.Load()-now, 0)), Delay: e.delay(left-1, 1, now), Source: SourceLease}, true
}

// holding is the units the key's lease holds for limits, not yet spent,
// and the remaining of limits[binding] as the lease's last batch was
// answered (-1 when the lease has no batch of that binding limit, or
// none).
func (ls *leases) holding(key string, limits []Limit, binding int) (units, remaining int64) {
	v, ok := ls.entries.Load(key)
	if !ok {
		return 0, -1
	}
	e := v.(*leaseEntry)
	if !slices.Equal(e.req.Limits(), limits) {
		return 0, -1
	}
	remaining = -1
	if e.at.Load() > 0 && int(e.binding.Load()) == binding {
		remaining = e.remaining.Load()
	}
	return max(e.units.Load(), 0), remaining
}

// reset ends the key's lease when it holds any of limits. Its units vanish
// with the state of the limits reset (a give-back to them could remove
// what was charged after the reset: a SlidingWindowLog's newest events);
// those held for its other limits go back to them.
func (ls *leases) reset(key string, limits []Limit) {
	v, ok := ls.entries.Load(key)
	if !ok {
		return
	}
	e := v.(*leaseEntry)
	var keep []Limit
	hit := false
	for _, lim := range e.req.Limits() {
		if slices.ContainsFunc(limits, func(r Limit) bool { return sameState(lim, r) }) {
			hit = true
		} else {
			keep = append(keep, lim)
		}
	}
	if !hit {
		return
	}
	if ls.entries.CompareAndDelete(key, e) {
		ls.deleted(key)
	}
	// A renewal in flight charges Redis and, finding the lease gone, gives
	// its units back: let it finish before the state is deleted, or it
	// charges the fresh state and its give-back removes what came after.
	// It is bounded by the Timeout.
	for wait := time.Now().Add(2 * ls.l.cfg.Timeout); e.renewing.Load() && time.Now().Before(wait); {
		time.Sleep(time.Millisecond)
	}
	left := e.units.Swap(0)
	if left <= 0 || len(keep) == 0 {
		return
	}
	req, err := remote.NewLease(e.req.Key(), 1, keep...)
	if err != nil {
		return
	}
	at := e.at.Load()
	ls.goDo(true, func() { ls.giveBack(e.node, req, at, left) })
}

// sameState reports whether a and b keep their state under one Redis key:
// a named limit's is its name and algorithm, an unnamed one's its
// canonical form.
func sameState(a, b Limit) bool {
	if a.Name != "" || b.Name != "" {
		return a.Name == b.Name && a.Algorithm == b.Algorithm
	}
	return a.Canonical() == b.Canonical()
}

// drop forgets the denial remembered for key, if any.
func (c *denyCache) drop(key string) {
	if _, ok := c.m.LoadAndDelete(key); ok {
		c.n.Add(-1)
	}
}
