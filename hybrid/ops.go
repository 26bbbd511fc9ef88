package hybrid

import (
	"context"
	"fmt"
	"time"

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
	if d, at := l.deny.find(key, 1, limits); d != nil {
		return d.answer(at), nil
	}
	if r, ok := l.leases.peek(key, limits); ok {
		return r, nil
	}
	nd := l.topo.locate(key)
	if nd == nil {
		return l.failure(opPeek, nil, answer{why: ReasonNoNode}, key, 1, limits), nil
	}
	var out remote.Result
	a := nd.direct(ctx, key, deadlineOf(ctx, time.Now(), l.cfg.Timeout), func(ctx context.Context) error {
		out, err = nd.store.Peek(ctx, req)
		return err
	})
	if !a.ok {
		return l.failure(opPeek, nd, a, key, 1, limits), nil
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
	if d, at := l.deny.find(key, 1, limits); d != nil {
		return l.count(d.answer(at)), nil
	}
	nd, shard, why, ok := l.topo.route(key)
	if !ok {
		return l.count(l.failure(opAtMost, nd, answer{why: why}, key, n, limits)), nil
	}
	a := nd.ask(ctx, req, deadlineOf(ctx, time.Now(), l.cfg.Timeout), shard)
	if !a.ok {
		return l.count(l.failure(opAtMost, nd, a, key, n, limits)), nil
	}
	r := result(a.out.Decision, limits, a.out.Binding, SourceRemote)
	r.Granted, r.Allowed = a.out.Granted, a.out.Granted > 0
	if !r.Allowed {
		l.deny.put(key, 1, limits, r, r.RetryAfter)
	}
	return l.count(r), nil
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
	l.deny.drop(key)
	if !l.direct(ctx, key, func(nd *node, ctx context.Context) error { return nd.store.Refund(ctx, req, n) }) && l.cfg.OnFailure == Fallback {
		l.fallback.Refund(key, n, l.scaled(limits)...)
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
	l.deny.drop(key)
	l.leases.reset(key, limits)
	l.fallback.Reset(key, l.scaled(limits)...)
	l.direct(ctx, key, func(nd *node, ctx context.Context) error { return nd.store.Reset(ctx, req) })
	return nil
}

// direct makes one call fn to the node that owns key, outside the batch
// (Refund, Reset), and reports whether it answered; when it did not, the
// reason is counted and logged.
func (l *Limiter) direct(ctx context.Context, key string, fn func(*node, context.Context) error) bool {
	nd := l.topo.locate(key)
	if nd == nil {
		l.noNode.Add(1)
		return false
	}
	a := nd.direct(ctx, key, deadlineOf(ctx, time.Now(), l.cfg.Timeout), func(ctx context.Context) error { return fn(nd, ctx) })
	if !a.ok {
		nd.note(a.why, a.err)
	}
	return a.ok
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
