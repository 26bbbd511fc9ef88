package hybrid

import (
	"context"
	"errors"
	"net"
	"runtime"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hybridlimit/hybridlimit/breaker"
	"github.com/hybridlimit/hybridlimit/remote"
)

// How a node's calls travel. A call that finds its node idle and not
// crowded, and whose budget is the Timeout, is made by its caller, in the
// caller's goroutine, with no hand-off (inline). Every other call waits in
// the node's queue (queue.go), and a worker, a goroutine of the node's,
// takes up to Batch.MaxSize of them into one round trip (one script call,
// remote.Store.DecideBatch); the calls that arrive while round trips are
// in flight ride in the next one. A worker is started when a call finds no
// round trip in flight, when an inline caller ends with calls waiting, and
// by the node's watch when the oldest call has waited Timeout/spurDivisor:
// on a fast node the round trip in flight ends first, and calls gather
// behind it; on a slow one, the round trips in flight grow with its
// latency, up to the node's conc. The watch also answers, at its deadline,
// a call still waiting (ReasonQueued) or still carried by a round trip
// that is bounded by its own Timeout (ReasonTimeout).
//
// No round trip runs on a caller's context. A caller whose context ends
// while its call waits, or while a worker's round trip carries it, leaves
// at once (ReasonCancelled); its leaving neither cuts a connection nor
// counts against the node. An inline caller sees its context's end when
// its round trip does, within its budget: answering it at once would take
// a hand-off to another goroutine at every call (DESIGN-NOTES).

// spurDivisor: a call that has waited Timeout/spurDivisor starts a round
// trip of its own (if the node may have one more in flight).
const spurDivisor = 8

// dropDivisor: a call taken into a round trip with less than
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

// call is one request for a node, from ask to its answer. Calls are
// reused (callPool), but for those a round trip may still refer to once
// their caller has its answer: one the watch answered while a round trip
// carried it (abandoned), one whose caller left while it was carried.
type call struct {
	req      remote.Request
	limits   []Limit          // storage of req's limits, kept across uses
	deadline time.Time        // the caller's: it is answered by then
	budget   time.Duration    // from arrival to deadline
	ctxBound bool             // deadline is the caller context's: its passing is ReasonCancelled
	shard    *breaker.Breaker // a Cluster master's breaker, or nil
	a        answer           // written by whoever answers it, before done
	done     chan struct{}    // receives once, when a is final

	// The queue's, under its mu.
	prev, next *call
	in         uint8     // inNone, inWaiting or inSent
	enqueued   time.Time // when it began to wait
	spurred    bool      // it has started a round trip of its own, or could not
	abandoned  bool      // answered by the watch while a round trip carried it
}

var callPool = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}

// finish returns c's answer, and puts c back in the pool unless a round
// trip still refers to it.
func (c *call) finish() answer {
	a := c.a
	c.put()
	return a
}

// put returns c to the pool, unless it was abandoned.
func (c *call) put() {
	if c.abandoned {
		return
	}
	c.req, c.a, c.shard = remote.Request{}, answer{}, nil
	callPool.Put(c)
}

// late is what the passing of a call's deadline means once it was sent:
// ctxBound, that the caller's context ended.
func late(ctxBound bool) Reason {
	if ctxBound {
		return ReasonCancelled
	}
	return ReasonTimeout
}

// unsent is what it means when a call is not sent before its deadline.
func unsent(ctxBound bool) Reason {
	if ctxBound {
		return ReasonCancelled
	}
	return ReasonQueued
}

// ask sends req to nd and waits for the answer until deadline, or until
// ctx ends. shard is the breaker of the Cluster master that serves req's
// key, on which its outcome also counts (nil: none).
func (nd *node) ask(ctx context.Context, req remote.Request, deadline time.Time, shard *breaker.Breaker) answer {
	if ctx.Err() != nil {
		return answer{why: ReasonCancelled}
	}
	now := time.Now()
	ctxBound := false
	if cd, ok := ctx.Deadline(); ok && !cd.After(deadline) {
		ctxBound = true
	}
	if !now.Before(deadline) {
		return answer{why: late(ctxBound)}
	}
	// Copies of the key and limits: the caller's must not escape, or every
	// call with variadic limits would allocate them, on the lease and
	// denial-cache paths too.
	c := callPool.Get().(*call)
	c.req = req.Keep(c.limits)
	c.limits = c.req.Limits()
	c.deadline, c.budget, c.ctxBound, c.shard = deadline, deadline.Sub(now), ctxBound, shard
	// A caller with a deadline of its own waits in the queue, where it
	// can leave at it: inline, its round trip would hold it to the
	// Timeout.
	switch nd.q.enter(c, !ctxBound, now) {
	case enterInline:
		c.a = nd.one(c.req, c.shard, deadline) // a fresh budget: never too late to send
		if nd.q.release() {
			nd.startWorker()
		}
		return c.finish()
	case enterFull:
		c.put()
		return answer{why: ReasonQueueFull}
	case enterClosed:
		c.put()
		return answer{why: ReasonTransport, err: ErrClosed}
	case enterStart:
		nd.startWorker()
	}
	select {
	case <-c.done:
		return c.finish()
	case <-ctx.Done(): // nil, never ready, for a context that cannot end
		if nd.q.leave(c) {
			c.put()
			return answer{why: ReasonCancelled} // never sent
		}
		// A round trip or the watch holds it, and answers nobody: it may
		// have been sent.
		return answer{why: ReasonCancelled, unknown: true}
	}
}

// startWorker starts a worker, in a slot in flight the queue took for it.
func (nd *node) startWorker() {
	nd.cfg.workers.Add(1)
	go nd.worker()
}

// worker makes round trips for nd while calls wait.
func (nd *node) worker() {
	defer nd.cfg.workers.Done()
	size := nd.cfg.batch.MaxSize
	if nd.cfg.batch.Disable {
		size = 1
	}
	var t trip
	for {
		t.batch = nd.q.next(t.batch[:0], size)
		if len(t.batch) == 0 {
			return
		}
		nd.roundTrip(&t)
		clear(t.batch)
		if !nd.cfg.noYield {
			nd.gather(size)
		}
	}
}

// maxYields bounds the yields of a worker between two round trips.
const maxYields = 4

// gather yields the processor before a worker takes its next batch, so
// that the callers just answered run first: a busy caller asks again at
// once and rides in the next round trip. Without it they queue again only
// after it has left, and a node's callers split into two half-size
// batches. It yields twice, and more while the count of calls waiting
// changed over the last yield and is below a batch (size), at most
// maxYields times in all: two processors run the callers a round trip
// answered in more than one turn. With nothing else to run a yield
// returns at once, though it may wake an idle processor's thread
// (runtime.Gosched calls wakep). BenchmarkColdDecisions measures it
// (DESIGN-NOTES has the figures).
func (nd *node) gather(size int) {
	prev := -1
	for range maxYields {
		runtime.Gosched()
		_, waiting := nd.q.load()
		if waiting == prev || waiting >= size {
			return
		}
		prev = waiting
	}
}

// trip is a worker's storage for its round trips, reused from one to the
// next.
type trip struct {
	batch []*call
	sent  []*call // of batch, those sent
	drop  []*call // of batch, those too late to send
	reqs  []remote.Request
	out   []remote.Result
	ans   []answer
}

// roundTrip sends the calls of t.batch, a worker's, in one round trip, and
// answers them. A call with too little of its budget left is not sent.
//
// A worker's round trip is bounded by Timeout from when it is sent, never
// by a caller's deadline: its timing out then means that the node did not
// answer within Timeout, which is what the breaker counts. A caller with
// less time left is answered by the watch at its deadline, unblamed.
//
// On a Redis Cluster the calls of each master travel in a round trip of
// their own, side by side, and are answered as soon as theirs is: in one
// pipeline, go-redis answers none before all its masters have, so a master
// that had stopped answering held every other master's requests until the
// deadline (TestClusterOneMasterPaused).
func (nd *node) roundTrip(t *trip) {
	now := time.Now()
	deadline := now.Add(nd.cfg.timeout)
	t.sent, t.drop = t.sent[:0], t.drop[:0]
	var first *breaker.Breaker
	mixed := false
	for _, c := range t.batch {
		if nd.tooLate(c, now) {
			t.drop = append(t.drop, c)
			continue
		}
		if len(t.sent) == 0 {
			first = c.shard
		}
		mixed = mixed || c.shard != first
		t.sent = append(t.sent, c)
	}
	if len(t.drop) > 0 {
		t.ans = resize(t.ans, len(t.drop))
		for i, c := range t.drop {
			t.ans[i] = answer{why: unsent(c.ctxBound)}
		}
		nd.deliver(t.drop, t.ans)
	}
	if !mixed || !nd.sharded {
		nd.send(t.sent, deadline, t)
		return
	}
	groups := map[*breaker.Breaker][]*call{}
	for _, c := range t.sent {
		groups[c.shard] = append(groups[c.shard], c)
	}
	var wg sync.WaitGroup
	for _, g := range groups {
		wg.Go(func() { nd.send(g, deadline, &trip{}) })
	}
	wg.Wait()
}

// send makes one round trip for calls, none of them too late, by deadline,
// and answers them; t's slices are its storage.
func (nd *node) send(calls []*call, deadline time.Time, t *trip) {
	t.ans = resize(t.ans, len(calls))
	switch len(calls) {
	case 0:
		return
	case 1:
		t.ans[0] = nd.one(calls[0].req, calls[0].shard, deadline)
		nd.deliver(calls, t.ans)
		return
	}
	t.reqs = resize(t.reqs, len(calls))
	t.out = resize(t.out, len(calls))
	for i, c := range calls {
		t.reqs[i] = c.req
	}
	sent, err := nd.exchange(deadline, func(ctx context.Context) error {
		return nd.store.DecideBatch(ctx, t.reqs, t.out)
	})
	if sent && err == nil {
		nd.batched.Add(int64(len(calls)))
	}
	for i, c := range calls {
		// Each request's own error says whether Redis decided it: in a
		// pipeline, one failed command says nothing of the others.
		t.ans[i] = outcome(sent, t.out[i], t.out[i].Err)
		nd.shardOutcome(c.shard, t.ans[i])
	}
	clear(t.reqs)
	nd.deliver(calls, t.ans)
}

// resize returns s with length n, reusing its storage.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// deliver answers the calls of a worker's round trip that ended, ans[i]
// being calls[i]'s answer, but those the watch answered first.
func (nd *node) deliver(calls []*call, ans []answer) {
	nd.q.settle(calls)
	for i, c := range calls {
		if c != nil {
			c.a = ans[i]
			c.done <- struct{}{} // last: its caller may reuse it at once
		}
	}
}

// watch is the node's timer's work (queue.due): it answers the calls whose
// deadline passed, and starts a round trip for a call that waited
// Timeout/spurDivisor. Only the node's watcher goroutine runs it.
func (nd *node) watch() {
	var expired []*call
	expired, start := nd.q.due(time.Now(), nd.expired[:0])
	for _, c := range expired {
		c.a = answer{why: unsent(c.ctxBound)}
		if c.abandoned { // a round trip was carrying it
			c.a = answer{why: late(c.ctxBound), unknown: true}
		}
		c.done <- struct{}{}
	}
	clear(expired)
	nd.expired = expired
	if start {
		nd.startWorker()
	}
}

// watcher runs the node's watch until stop is closed.
func (nd *node) watcher(stop <-chan struct{}) {
	defer nd.cfg.workers.Done()
	for {
		select {
		case <-nd.timer.C:
			nd.watch()
		case <-stop:
			nd.timer.Stop()
			return
		}
	}
}

// one makes the round trip of req alone, by deadline, and returns its
// answer.
func (nd *node) one(req remote.Request, shard *breaker.Breaker, deadline time.Time) answer {
	var out remote.Result
	sent, _ := nd.exchange(deadline, func(ctx context.Context) error {
		out, _ = nd.store.Decide(ctx, req) // the error is out.Err
		return out.Err
	})
	a := outcome(sent, out, out.Err)
	nd.shardOutcome(shard, a)
	return a
}

// outcome is the answer of a round trip that sent a request (or, sent
// false, that the breaker refused), Redis's result out and err its error.
// A timeout or a connection broken after the request was written leaves
// its outcome unknown; a connection that could not be made, or an error
// Redis answered, means the request did not run (a script checks what it
// may refuse before it writes).
func outcome(sent bool, out remote.Result, err error) answer {
	switch {
	case !sent:
		return answer{why: ReasonBreakerOpen}
	case err != nil:
		why := reasonOf(err)
		return answer{why: why, err: err, unknown: (why == ReasonTimeout || why == ReasonTransport) && !undialled(err)}
	}
	return answer{out: out, ok: true}
}

// undialled reports whether err says the client wrote nothing: a
// connection could not be opened (go-redis returns a dial's error, or the
// last one while it refuses to dial again, before it writes a command), or
// the client was closed.
func undialled(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial" || errors.Is(err, redis.ErrClosed)
}

// shardOutcome counts a request's answer a on the breaker of its Cluster
// master (shard), and, after a failure, has the Store reload its slot map:
// a replica may serve the failed master's slots now. ReasonCluster is no
// master's failure (CLUSTERDOWN, or a move that outlasted the budget): it
// counts on no breaker, and reloads the map too. Requests of no shard
// (leases) only trigger the reload. A request the breaker refused, or
// that its caller left, counts on nothing.
func (nd *node) shardOutcome(shard *breaker.Breaker, a answer) {
	if !nd.sharded || a.why == ReasonBreakerOpen && !a.ok {
		return
	}
	failed := !a.ok && a.why != ReasonCancelled && a.why != ReasonQueued && a.why != ReasonCluster
	if failed || a.why == ReasonCluster {
		nd.store.Refresh()
	}
	if shard == nil {
		return
	}
	if done, ok := shard.Allow(); ok {
		switch {
		case a.ok:
			done(breaker.Success)
		case failed:
			done(breaker.Failure)
		default:
			done(breaker.Ignore)
		}
	}
}

// exchange makes one round trip to nd through its breaker, bounded by
// deadline, and counts it. It never runs on a caller's context, so that a
// caller's leaving does not cut the connection. sent is false when the
// breaker refused: nothing was sent.
func (nd *node) exchange(deadline time.Time, fn func(context.Context) error) (sent bool, err error) {
	done, allowed := func(breaker.Outcome) {}, true
	if !nd.sharded {
		// A Cluster's masters have breakers of their own (shardOutcome).
		done, allowed = nd.br.Allow()
	}
	if !allowed {
		return false, nil
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	start := time.Now()
	err = fn(ctx)
	rtt := time.Since(start)
	cancel()
	nd.latency.observe(rtt)
	nd.observeRTT(rtt)
	done(breaker.Classify(context.Background(), err, isSuccess)) // not the caller's context: its leaving is not the node's failure
	nd.calls.Add(1)
	if err != nil {
		nd.errs.Add(1)
		nd.cfg.logger.Debug("hybrid: remote call failed", "node", nd.name, "err", err)
	}
	return true, err
}

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
