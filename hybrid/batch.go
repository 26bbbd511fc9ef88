package hybrid

import (
	"context"
	"runtime"
	"sync"
	"time"

	"github.com/hybridlimit/hybridlimit/breaker"
	"github.com/hybridlimit/hybridlimit/remote"
)

// batcher coalesces the concurrent requests for one node. A request that
// finds no round trip in flight (and whose budget is the Timeout) makes
// one itself, in its own goroutine, with no hand-off; the requests that
// arrive while a round trip is in flight queue, and a round trip takes up
// to Batch.MaxSize of them at once (one script call,
// remote.Store.DecideBatch), in a goroutine of its own (a worker), started
// when the round trip in flight ends.
//
// Several round trips may be in flight (at most the node's conc): a
// request that has waited spurAfter (Timeout/8) without being taken starts
// another round trip. On a fast node the round trip in flight ends first,
// and requests gather behind it as they always did; on a slow one, the
// round trips in flight grow with its latency, so that a request waits at
// most spurAfter before it is sent and a node that answers within its
// Timeout keeps its keys.
//
// No round trip runs on a caller's context: a queued caller whose context
// ends leaves at once, and its leaving neither cuts a connection nor counts
// against the node; a caller making its own round trip sees its
// cancellation when that round trip ends, within the Timeout.
type batcher struct {
	mu       sync.Mutex
	inflight int     // round trips in flight (workers, and inline callers)
	crowded  bool    // the last batch a worker took held more than one request
	closed   bool    // the Limiter is closing: no worker starts
	pending  []*call // waiting to be taken, oldest first
}

// yieldBetweenBatches: a worker yields the processor after answering a
// round trip's callers, before it takes the next batch. Under load the
// batches are fuller: without it, the callers a round trip answers queue
// again only after the next round trip has left, and a node's callers
// alternate between two half-size batches (BenchmarkBatchYield, on real
// redis-server: DESIGN-NOTES quotes it). A variable only so that the
// benchmark can compare.
var yieldBetweenBatches = true

// spurDivisor: a request queued for Timeout/spurDivisor starts a round
// trip of its own (if the node may have one more in flight).
const spurDivisor = 8

// dropDivisor: a request taken into a round trip with less than
// budget/dropDivisor of its budget left is not sent (ReasonQueued): its
// answer would come too late, and its timing out would count against a
// node that did nothing wrong. Nor is one with less time left than the
// node's recent round trips take (rttWeight), up to half its budget: on a
// node with more callers than round trips in flight, its caller would
// leave before the answer, and Redis would have charged it for nothing.
const dropDivisor = 4

// rttWeight: each round trip moves the node's average round-trip time by
// 1/rttWeight of its difference from it.
const rttWeight = 8

// observeRTT folds one round trip's time into the node's average.
func (nd *node) observeRTT(d time.Duration) {
	old := nd.rtt.Load()
	nd.rtt.Store(old + (int64(d)-old)/rttWeight) // a lost update only slows the average
}

// tooLate reports whether c, with the time it has left at now, should not
// be sent.
func (nd *node) tooLate(c *call, now time.Time) bool {
	left := c.deadline.Sub(now)
	return left < c.budget/dropDivisor || left < min(time.Duration(nd.rtt.Load()), c.budget/2)
}

// call is one request waiting for a round trip. Calls are reused
// (callPool) unless their caller left before the answer came.
type call struct {
	req      remote.Request
	deadline time.Time     // the caller's: it leaves then
	budget   time.Duration // from arrival to deadline
	dropped  bool          // not sent: too little of its budget was left
	ctxBound bool          // deadline is the caller context's: its passing is ReasonCancelled
	out      remote.Result
	ok       bool             // out is Redis's answer
	why      Reason           // when !ok
	err      error            // when !ok: the round trip's error, if any
	queued   bool             // in batcher.pending (guarded by its mu)
	done     chan struct{}    // receives once, when the answer is final
	limits   []Limit          // storage of req's limits, kept across uses
	timer    *time.Timer      // kept across uses
	shard    *breaker.Breaker // a cluster master's breaker, or nil
}

var callPool = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}

// ask sends req to nd and waits for the answer until deadline, or until ctx
// ends. shard is the breaker of the cluster master that serves req's key,
// on which its outcome also counts (nil: none).
func (nd *node) ask(ctx context.Context, req remote.Request, deadline time.Time, shard *breaker.Breaker) answer {
	if ctx.Err() != nil {
		return answer{why: ReasonCancelled}
	}
	now := time.Now()
	late := ReasonTimeout // what the deadline's passing means
	ctxBound := false
	if cd, ok := ctx.Deadline(); ok && !cd.After(deadline) {
		late, ctxBound = ReasonCancelled, true
	}
	if !now.Before(deadline) {
		return answer{why: late}
	}
	// Copies of the key and limits: the caller's must not escape, or every
	// call with variadic limits would allocate them, on the lease and
	// denial-cache paths too.
	c := callPool.Get().(*call)
	c.req = req.Keep(c.limits)
	c.limits = c.req.Limits()
	c.deadline, c.budget, c.ctxBound = deadline, deadline.Sub(now), ctxBound
	c.out, c.ok, c.why, c.err, c.dropped, c.shard = remote.Result{}, false, 0, nil, false, shard
	b := &nd.batch
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		callPool.Put(c)
		return answer{why: ReasonTransport, err: ErrClosed}
	}
	if b.inflight == 0 && !b.crowded && !ctxBound {
		// An idle node that has seen no crowd since its last lone round
		// trip, and a caller whose budget is the Timeout: it makes the
		// round trip itself, with no hand-off, on no context of its own
		// (its leaving must not cut the connection): a cancellation is
		// seen when the round trip ends, within the Timeout. A caller
		// with a deadline of its own queues, and leaves at it. On a
		// crowded node the caller queues for a worker instead, so that
		// the callers that arrive with it share its round trip: inline,
		// it would go alone and the rest behind it (uniform, 4
		// Limiters: 0.293 against 0.280 Redis calls a decision, 7 %
		// fewer decisions a second).
		b.inflight++
		b.mu.Unlock()
		nd.one(c, deadline) // its budget bounds it, fresh: never too late to send
		nd.release()
		return c.finish()
	}
	c.queued = true
	b.pending = append(b.pending, c)
	start := b.inflight < nd.conc && (b.inflight == 0 || nd.cfg.batch.Disable)
	if start {
		nd.startWorker()
	}
	b.mu.Unlock()

	spur := !nd.cfg.batch.Disable
	wait := c.budget
	if s := nd.cfg.timeout / spurDivisor; spur && s < wait {
		wait = s
	} else {
		spur = false
	}
	if c.timer == nil {
		c.timer = time.NewTimer(wait)
	} else {
		c.timer.Reset(wait)
	}
	for {
		select {
		case <-c.done:
			c.timer.Stop()
			return c.finish()
		case <-ctx.Done():
			c.timer.Stop()
			if b.leave(c) {
				callPool.Put(c)
			} // else a round trip holds it and will answer nobody: not reused
			return answer{why: ReasonCancelled}
		case <-c.timer.C:
			if spur {
				spur = false
				nd.spur(c)
				c.timer.Reset(time.Until(deadline))
				continue
			}
			if b.leave(c) {
				callPool.Put(c)
				if ctxBound {
					return answer{why: ReasonCancelled}
				}
				return answer{why: ReasonQueued}
			}
			return answer{why: late}
		}
	}
}

// finish returns c's answer and puts c back in the pool: nothing refers to
// it any more.
func (c *call) finish() answer {
	a := answer{out: c.out, ok: c.ok, why: c.why, err: c.err}
	c.req, c.out, c.err, c.shard = remote.Request{}, remote.Result{}, nil, nil
	callPool.Put(c)
	return a
}

// startWorker starts a round trip's goroutine. b.mu must be held.
func (nd *node) startWorker() {
	nd.batch.inflight++
	nd.cfg.workers.Add(1)
	go nd.worker()
}

// spur starts another round trip for c, if c still waits and the node may
// have one more in flight.
func (nd *node) spur(c *call) {
	b := &nd.batch
	b.mu.Lock()
	if c.queued && !b.closed && b.inflight < nd.conc {
		nd.startWorker()
	}
	b.mu.Unlock()
}

// release ends an inline round trip: requests that gathered meanwhile get
// a worker, in the slot the inline caller held.
func (nd *node) release() {
	b := &nd.batch
	b.mu.Lock()
	if len(b.pending) > 0 && !b.closed {
		nd.cfg.workers.Add(1) // the worker takes over the inline caller's slot
		go nd.worker()
	} else {
		b.inflight--
	}
	b.mu.Unlock()
}

// close stops workers from starting; queued requests are still sent.
func (b *batcher) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
}

// leave takes c out of the queue, if it is still waiting there.
func (b *batcher) leave(c *call) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !c.queued {
		return false
	}
	for i, p := range b.pending {
		if p == c {
			b.pending = append(b.pending[:i], b.pending[i+1:]...)
			break
		}
	}
	c.queued = false
	return true
}

// worker sends round trips for nd while requests are queued.
func (nd *node) worker() {
	defer nd.cfg.workers.Done()
	size := nd.cfg.batch.MaxSize
	if nd.cfg.batch.Disable {
		size = 1
	}
	b := &nd.batch
	var batch []*call
	for {
		b.mu.Lock()
		k := min(len(b.pending), size)
		if k == 0 {
			b.inflight--
			b.mu.Unlock()
			return
		}
		b.crowded = k > 1
		batch = append(batch[:0], b.pending[:k]...)
		for _, c := range batch {
			c.queued = false
		}
		n := copy(b.pending, b.pending[k:])
		clear(b.pending[n:])
		b.pending = b.pending[:n]
		b.mu.Unlock()
		nd.roundTrip(batch, time.Time{}, true) // signals every call
		clear(batch)
		if yieldBetweenBatches {
			// The callers just answered run before the next batch is
			// taken: a busy caller asks again at once, and its request
			// joins this batch rather than the one after. An idle
			// processor returns at once.
			runtime.Gosched()
		}
	}
}

// roundTrip sends the calls of a batch in one round trip, and sets their
// answers. A call with too little of its budget left is not sent. With
// signal set (a worker's round trip), each call is signalled once its
// answer is final; an inline caller waits in roundTrip and is not.
//
// A worker's round trip is bounded by Timeout from when it is sent (a zero
// deadline), never by a caller's deadline: its timing out then means that
// the node did not answer within Timeout, which is what the breaker counts.
// A caller with less time left leaves on its own, unblamed. An inline round
// trip, which its caller waits in, is bounded by that caller's deadline.
//
// On a Redis Cluster the calls of each master travel in a round trip of
// their own, side by side, and are answered as soon as theirs is: in one
// pipeline, go-redis answers none before all its masters have, so a master
// that had stopped answering held every other master's requests until the
// deadline (TestClusterOneMasterPaused).
func (nd *node) roundTrip(batch []*call, deadline time.Time, signal bool) {
	now := time.Now()
	if deadline.IsZero() {
		deadline = now.Add(nd.cfg.timeout)
	}
	var buf [8]*call // most batches: the calls to send, without a heap slice
	sent := buf[:0]
	var first *breaker.Breaker
	mixed := false
	for _, c := range batch {
		if nd.tooLate(c, now) {
			c.dropped, c.why = true, ReasonQueued
			if c.ctxBound {
				c.why = ReasonCancelled
			}
			continue
		}
		if len(sent) == 0 {
			first = c.shard
		}
		mixed = mixed || c.shard != first
		sent = append(sent, c)
	}
	if !mixed || !nd.sharded {
		nd.send(sent, deadline)
		if signal {
			for _, c := range batch {
				c.done <- struct{}{} // last: the caller may reuse c at once
			}
		}
		return
	}
	groups := map[*breaker.Breaker][]*call{}
	for _, c := range sent {
		groups[c.shard] = append(groups[c.shard], c)
	}
	if signal {
		// The dropped ones are final already; a call once signalled may
		// be reused by its caller at once, so none is read after.
		for _, c := range batch {
			if c.dropped {
				c.done <- struct{}{}
			}
		}
	}
	var wg sync.WaitGroup
	dl := deadline // captured here only, so the common path allocates nothing for it
	for _, g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nd.send(g, dl)
			if signal {
				for _, c := range g {
					c.done <- struct{}{}
				}
			}
		}()
	}
	wg.Wait()
}

// send makes one round trip for calls, none of them dropped, and sets
// their answers.
func (nd *node) send(calls []*call, deadline time.Time) {
	switch len(calls) {
	case 0:
		return
	case 1:
		nd.one(calls[0], deadline)
		return
	}
	reqs := make([]remote.Request, len(calls))
	for i, c := range calls {
		reqs[i] = c.req
	}
	out := make([]remote.Result, len(reqs))
	ok, err := nd.call(deadline, func(ctx context.Context) error {
		return nd.store.DecideBatch(ctx, reqs, out)
	})
	if ok {
		nd.batched.Add(int64(len(reqs)))
	}
	for i, c := range calls {
		// Each request's own error says whether Redis decided it: in a
		// pipeline, one failed command says nothing of the others.
		c.out, c.err = out[i], err
		c.settle(ok)
		nd.shardOutcome(c, ok)
	}
}

// one makes the round trip of c alone, by deadline, and sets its answer.
func (nd *node) one(c *call, deadline time.Time) {
	ok, err := nd.call(deadline, func(ctx context.Context) error {
		c.out, _ = nd.store.Decide(ctx, c.req) // the error is c.out.Err
		return c.out.Err
	})
	c.err = err
	c.settle(ok)
	nd.shardOutcome(c, ok)
}

// settle sets c's outcome once its round trip is over. sent is false when
// the breaker refused the round trip.
func (c *call) settle(sent bool) {
	switch {
	case !sent:
		c.why, c.err = ReasonBreakerOpen, nil
	case c.out.Err != nil:
		c.why, c.err = reasonOf(c.out.Err), c.out.Err
	default:
		c.ok, c.err = true, nil
	}
}

// shardOutcome counts c's outcome on the breaker of its cluster master,
// and, after a failure, has the Store reload its slot map: a replica may
// serve the failed master's slots now. ReasonCluster is no master's
// failure (CLUSTERDOWN, or a move that outlasted the budget): it counts on
// no breaker, and reloads the map too. Requests of no shard (leases) only
// trigger the reload.
func (nd *node) shardOutcome(c *call, sent bool) {
	if !nd.sharded || !sent || c.dropped {
		return
	}
	failed := !c.ok && c.why != ReasonCancelled && c.why != ReasonQueued && c.why != ReasonCluster
	if failed || c.why == ReasonCluster {
		nd.store.Refresh()
	}
	if c.shard == nil {
		return
	}
	if done, ok := c.shard.Allow(); ok {
		switch {
		case c.ok:
			done(breaker.Success)
		case failed:
			done(breaker.Failure)
		default:
			done(breaker.Ignore)
		}
	}
}

// call makes one round trip to nd through its breaker, bounded by
// deadline, and counts it. It never runs on a caller's context, so that a
// caller's leaving does not cut the connection. ok is false when the
// breaker refused: nothing was sent.
func (nd *node) call(deadline time.Time, fn func(context.Context) error) (ok bool, err error) {
	done, allowed := func(breaker.Outcome) {}, true
	if !nd.sharded {
		// A cluster's masters have breakers of their own (shardOutcome).
		done, allowed = nd.br.Allow()
	}
	if !allowed {
		return false, nil
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	start := time.Now()
	err = fn(ctx)
	rtt := time.Since(start)
	nd.latency.observe(rtt)
	nd.observeRTT(rtt)
	cancel()
	done(breaker.Classify(nil, err, isSuccess))
	nd.calls.Add(1)
	if err != nil {
		nd.errs.Add(1)
		nd.cfg.logger.Debug("hybrid: remote call failed", "node", nd.name, "err", err)
	}
	return true, err
}
