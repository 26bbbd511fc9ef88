package hybrid

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hybridlimit/hybridlimit/breaker"
	"github.com/hybridlimit/hybridlimit/limit"
	"github.com/hybridlimit/hybridlimit/remote"
)

// batcher coalesces the concurrent requests for one node: while a round
// trip is in flight, the requests that arrive gather, and the next round
// trip decides up to max of them at once (remote.Store.DecideMany, one
// script call). An idle node is asked at once. Every request keeps its own
// deadline, Config.Timeout after it arrived: a round trip is bounded by the
// earliest deadline among its requests, and a request still waiting for its
// turn at its deadline leaves, to be answered by the failure mode.
type batcher struct {
	mu      sync.Mutex
	busy    bool
	pending []*call
}

// call is one request waiting in a batch. Calls are reused (callPool):
// done is signalled by a send, not closed, and the timer is reset.
type call struct {
	req      remote.Request
	deadline time.Time
	out      remote.Result
	ok       bool          // the node was asked (the breaker let the batch through)
	done     chan struct{} // receives once, when out and ok are final
	lead     chan []*call  // the batch this call must send, when it is its turn
	limits   []Limit       // storage of req.Limits, kept across uses
	timer    *time.Timer   // the deadline, kept across uses
}

// callPool keeps calls with their channels, timer and limits: a request
// that waits for a batch otherwise allocated all four.
var callPool = sync.Pool{New: func() any {
	return &call{done: make(chan struct{}, 1), lead: make(chan []*call, 1)}
}}

// decide asks nd about one request, in a batch when others are in flight.
// ok is false when the node was not asked (breaker open, or no turn before
// the deadline); err is the call's error.
func (l *Limiter) decide(ctx context.Context, nd *node, key string, n int64, limits []Limit) (d limit.Decision, binding int, ok bool, err error) {
	r, ok := l.send(ctx, nd, remote.Request{Key: key, Cost: n, Limits: limits})
	return r.Decision, r.Binding, ok, r.Err
}

// send asks nd about one request (a decision or a lease), in a batch when
// others are in flight. ok is false when the node was not asked (breaker
// open, or no turn before the deadline); r.Err is the call's error.
func (l *Limiter) send(ctx context.Context, nd *node, req remote.Request) (r remote.Result, ok bool) {
	deadline := time.Now().Add(l.cfg.Timeout)
	b := &nd.batch
	b.mu.Lock()
	if !b.busy || l.cfg.Batch.Disable {
		b.busy = b.busy || !l.cfg.Batch.Disable
		b.mu.Unlock()
		r, ok = l.sendOne(ctx, deadline, nd, req)
		if !l.cfg.Batch.Disable {
			l.handOff(nd)
		}
		return r, ok
	}
	// Copies of the key and limits: the caller's must not escape, or every
	// call with variadic limits would allocate them, on the lease and
	// denial-cache paths too.
	c := callPool.Get().(*call)
	c.limits = append(c.limits[:0], req.Limits...)
	c.req = remote.Request{Key: strings.Clone(req.Key), Cost: req.Cost, Limits: c.limits, Lease: req.Lease}
	c.deadline = deadline
	c.out, c.ok = remote.Result{}, false
	b.pending = append(b.pending, c)
	b.mu.Unlock()
	if c.timer == nil {
		c.timer = time.NewTimer(time.Until(deadline))
	} else {
		c.timer.Reset(time.Until(deadline)) // stopped, and its channel empty
	}
	left := false
	select {
	case <-c.done:
	case batch := <-c.lead:
		l.runBatch(nd, batch)
		<-c.done // the batch, c's own, signalled it
	case <-c.timer.C:
		if left = b.leave(c); !left {
			// Already taken into a batch, which ends by our deadline.
			select {
			case <-c.done:
			case batch := <-c.lead:
				l.runBatch(nd, batch)
				<-c.done
			}
		}
	}
	c.timer.Stop()
	if !left {
		r, ok = c.out, c.ok
	}
	// Nothing refers to c now: a batch signals done last, and a call that
	// left the queue was never in one.
	c.req, c.out = remote.Request{}, remote.Result{}
	callPool.Put(c)
	return r, ok
}

// leave takes c out of the queue, if it is still waiting there.
func (b *batcher) leave(c *call) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, p := range b.pending {
		if p == c {
			b.pending = append(b.pending[:i], b.pending[i+1:]...)
			return true
		}
	}
	return false
}

// runBatch sends a batch this goroutine was handed, then passes the node on.
func (l *Limiter) runBatch(nd *node, batch []*call) {
	l.decideBatch(nd, batch)
	l.handOff(nd)
}

// handOff passes the node to the next batch, if requests have gathered:
// the first of them sends it.
func (l *Limiter) handOff(nd *node) {
	b := &nd.batch
	b.mu.Lock()
	if len(b.pending) == 0 {
		b.busy = false
		b.mu.Unlock()
		return
	}
	k := min(len(b.pending), l.cfg.Batch.MaxSize)
	next := make([]*call, k)
	copy(next, b.pending)
	b.pending = append(b.pending[:0], b.pending[k:]...)
	b.mu.Unlock()
	next[0].lead <- next
}

// call makes one round trip to nd through its breaker, bounded by deadline
// and by parent (whose own end does not count against the node), and counts
// it. ok is false when the breaker refused: nothing was sent.
func (l *Limiter) call(parent context.Context, deadline time.Time, nd *node, fn func(context.Context) error) (ok bool, err error) {
	done, allowed := nd.br.Allow()
	if !allowed {
		return false, nil
	}
	ctx, cancel := context.WithDeadline(parent, deadline)
	start := time.Now()
	err = fn(ctx)
	nd.latency.observe(time.Since(start))
	cancel()
	done(breaker.Classify(parent, err, isSuccess))
	nd.calls.Add(1)
	if err != nil {
		nd.errs.Add(1)
		l.cfg.Logger.Debug("hybrid: remote call failed", "node", nd.name, "err", err)
	}
	return true, err
}

// sendOne is one request in one round trip.
func (l *Limiter) sendOne(parent context.Context, deadline time.Time, nd *node, req remote.Request) (r remote.Result, ok bool) {
	ok, r.Err = l.call(parent, deadline, nd, func(ctx context.Context) (err error) {
		if req.Lease {
			var g remote.Lease
			g, err = nd.store.Lease(ctx, req.Key, req.Cost, req.Limits...)
			r.Decision, r.Binding, r.Granted, r.At = g.Decision, g.Binding, g.Granted, g.At
			r.Allowed = g.Granted > 0
			return err
		}
		r.Decision, r.Binding, err = nd.store.Decide(ctx, req.Key, req.Cost, req.Limits...)
		return err
	})
	return r, ok
}

// decideBatch sends a batch in one round trip and wakes its calls.
func (l *Limiter) decideBatch(nd *node, batch []*call) {
	all := batch // every call is woken, sent or not
	defer func() {
		for _, c := range all {
			c.done <- struct{}{}
		}
	}()
	if len(batch) == 1 {
		c := batch[0]
		c.out, c.ok = l.sendOne(context.Background(), c.deadline, nd, c.req)
		return
	}
	// Requests that waited so long that little of their Timeout is left are
	// answered by the failure mode rather than sent: a round trip bounded
	// by a nearly spent deadline would fail, and count against a node that
	// did nothing wrong.
	minBudget := l.cfg.Timeout / 4
	now := time.Now()
	send := batch[:0:0]
	for _, c := range batch {
		if c.deadline.Sub(now) >= minBudget {
			send = append(send, c)
		}
	}
	if len(send) == 0 {
		return
	}
	batch = send
	reqs := make([]remote.Request, len(batch))
	deadline := batch[0].deadline
	for i, c := range batch {
		reqs[i] = c.req
		if c.deadline.Before(deadline) {
			deadline = c.deadline
		}
	}
	out := make([]remote.Result, len(batch))
	ok, err := l.call(context.Background(), deadline, nd, func(ctx context.Context) error {
		if _, cluster := nd.client.(*redis.ClusterClient); cluster {
			return nd.store.DecidePipeline(ctx, reqs, out) // keys of a batch live in many slots
		}
		return nd.store.DecideMany(ctx, reqs, out)
	})
	if !ok {
		return // every call's ok stays false: the failure mode answers
	}
	nd.batched.Add(int64(len(batch)))
	for i, c := range batch {
		c.ok = true
		c.out = out[i]
		if err != nil && c.out.Err == nil {
			c.out.Err = err
		}
	}
}
