package hybrid

import (
	"sync"
	"time"
)

// queue is one node's calls and round trips: the calls waiting for a
// round trip (oldest first), the calls a worker's round trip carries and
// has not answered yet, and the count of round trips in flight. It decides
// who makes a round trip and when; the node makes them (roundtrip.go).
// Every method takes mu briefly; none blocks or does I/O, and only close
// allocates.
//
// A call is in at most one of the two lists, linked through its own prev
// and next, so that entering, leaving and being taken are O(1) however
// long the queue. The waiting list is bounded (max): a call more is
// refused and answered by the failure mode (ReasonQueueFull) at once,
// rather than left to wait for a round trip it could not have in time.
//
// A call has no timer. The node's watch (node.watch, on the one timer
// watch, set while calls wait or are sent and stopped once none does):
// when the oldest waiting call
// has waited spurAfter, it starts another round trip for it (a slow
// node's round trips in flight grow with its latency), and at the oldest
// call's deadline it answers the calls whose deadline passed, waiting or
// sent (their callers do not wait out a round trip bounded by its own
// Timeout). Deadlines follow the calls' order in each list, but for
// callers with a deadline of their own, which is earlier and which they
// watch themselves (ctx.Done): the oldest call of a list is the first due.
type queue struct {
	mu       sync.Mutex
	waiting  callList      // not yet taken into a round trip, oldest first
	sent     callList      // carried by a worker's round trip, not yet answered
	inflight int           // round trips in flight: workers' and inline callers'
	crowded  bool          // the last batch a worker took held more than one call
	closed   bool          // no call enters
	idle     chan struct{} // made by close: closed once nothing is in flight
	armed    time.Time     // when the watch's timer fires; zero: not set

	// Fixed by newQueue.
	max       int           // calls that may wait
	conc      int           // round trips that may be in flight
	single    bool          // batching off: a round trip carries one call
	spurAfter time.Duration // a call waiting this long starts a round trip; 0: never
	watch     *time.Timer
}

// callList is a doubly linked list of calls, through their prev and next.
type callList struct {
	head, tail *call
	n          int
}

func (l *callList) push(c *call) {
	c.prev, c.next = l.tail, nil
	if l.tail == nil {
		l.head = c
	} else {
		l.tail.next = c
	}
	l.tail = c
	l.n++
}

func (l *callList) remove(c *call) {
	if c.prev == nil {
		l.head = c.next
	} else {
		c.prev.next = c.next
	}
	if c.next == nil {
		l.tail = c.prev
	} else {
		c.next.prev = c.prev
	}
	c.prev, c.next = nil, nil
	l.n--
}

// Where a call is (call.in): in no list, waiting, or sent.
const (
	inNone uint8 = iota
	inWaiting
	inSent
)

// newQueue returns the queue of a node that may have conc round trips in
// flight and max calls waiting. A call waiting spurAfter starts another
// round trip (0: never). watch is the stopped timer that the node's watch
// runs on.
func newQueue(conc, max int, single bool, spurAfter time.Duration, watch *time.Timer) *queue {
	return &queue{conc: conc, max: max, single: single, spurAfter: spurAfter, watch: watch}
}

// entry is how enter placed a call.
type entry uint8

const (
	// enterInline: the caller makes the round trip itself, now, and calls
	// release when it is over.
	enterInline entry = iota
	// enterQueued: the call waits; a round trip in flight will take it.
	enterQueued
	// enterStart: the call waits, and its caller starts a worker, in the
	// slot in flight taken for it.
	enterStart
	// enterFull: as many calls wait as may; the call was refused.
	enterFull
	// enterClosed: the node is closing; the call was refused.
	enterClosed
)

// enter places c, arriving at now. inline says whether its caller may
// make the round trip itself: its budget is the Timeout, not a deadline
// of its own that it would have to leave at.
func (q *queue) enter(c *call, inline bool, now time.Time) entry {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.closed:
		return enterClosed
	case q.inflight == 0 && !q.crowded && inline:
		// An idle node that saw no crowd since its last lone round trip:
		// no hand-off. On a crowded node the caller waits for a worker
		// instead, so that the callers arriving with it share one round
		// trip: inline, it would go alone and the rest after it.
		q.inflight++
		return enterInline
	case q.waiting.n >= q.max:
		return enterFull
	}
	c.in, c.enqueued, c.spurred = inWaiting, now, false
	q.waiting.push(c)
	if q.armed.IsZero() || q.waiting.head == c && q.spurAfter > 0 && q.armed.After(now.Add(q.spurAfter)) {
		// Nothing waited or was sent (the watch sets its timer while
		// anything does), or c is the first to wait, and spurs sooner
		// than the watch runs.
		q.setWatch(now)
	}
	if q.inflight < q.conc && (q.inflight == 0 || q.single) {
		q.inflight++
		return enterStart
	}
	return enterQueued
}

// leave takes c out of the waiting list, if it is still there: its caller
// gives up. It reports false when a round trip took c or the watch
// answered it.
func (q *queue) leave(c *call) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if c.in != inWaiting {
		return false
	}
	q.waiting.remove(c)
	c.in = inNone
	q.disarm()
	return true
}

// release ends an inline caller's round trip. It reports whether the
// caller must start a worker, in the slot it held, for the calls that
// gathered meanwhile (after close too: they are sent).
func (q *queue) release() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.waiting.n > 0 {
		return true
	}
	q.end()
	return false
}

// next is a worker's turn: the next batch, up to size calls, appended to
// batch and marked sent. An empty batch ends the worker: its slot in
// flight is given up.
func (q *queue) next(batch []*call, size int) []*call {
	q.mu.Lock()
	defer q.mu.Unlock()
	k := min(q.waiting.n, size)
	if k == 0 {
		q.end()
		return batch
	}
	q.crowded = k > 1
	for range k {
		c := q.waiting.head
		q.waiting.remove(c)
		c.in = inSent
		q.sent.push(c)
		batch = append(batch, c)
	}
	if h := q.waiting.head; h != nil && q.spurAfter > 0 && !h.spurred && q.armed.After(h.enqueued.Add(q.spurAfter)) {
		// More waited than a round trip takes: the oldest left is the
		// next to spur.
		q.setWatch(time.Now())
	}
	return batch
}

// settle takes the calls of a round trip that ended out of the sent list,
// to be answered by it. Those the watch answered meanwhile are set to nil
// in calls: they are not the round trip's to answer.
func (q *queue) settle(calls []*call) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, c := range calls {
		if c.in != inSent {
			calls[i] = nil
			continue
		}
		q.sent.remove(c)
		c.in = inNone
	}
	q.disarm()
}

// disarm stops the watch's timer once no call waits or is sent: a timer
// left to fire would wake the watcher for nothing, after every call that
// waited on a lightly loaded node. q.mu must be held.
func (q *queue) disarm() {
	if q.waiting.n == 0 && q.sent.n == 0 && !q.armed.IsZero() {
		q.watch.Stop()
		q.armed = time.Time{}
	}
}

// end gives up a round trip's slot. q.mu must be held.
func (q *queue) end() {
	q.inflight--
	if q.inflight == 0 && q.idle != nil {
		close(q.idle)
		q.idle = nil
	}
}

// due is the watch at now. It takes the calls whose deadline passed out of
// both lists and appends them to expired, for the watch to answer; and it
// reports whether the oldest waiting call has waited spurAfter while the
// node may have one more round trip in flight, for the watch to start a
// worker in the slot taken for it. It sets the timer again while calls
// wait or are sent.
func (q *queue) due(now time.Time, expired []*call) ([]*call, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.armed = time.Time{}
	for c := q.waiting.head; c != nil && !now.Before(c.deadline); c = q.waiting.head {
		q.waiting.remove(c)
		c.in = inNone
		expired = append(expired, c)
	}
	for c := q.sent.head; c != nil && !now.Before(c.deadline); c = q.sent.head {
		// Its round trip still refers to it: abandoned, never reused.
		q.sent.remove(c)
		c.in, c.abandoned = inNone, true
		expired = append(expired, c)
	}
	h := q.waiting.head
	start := false
	if h != nil && q.spurAfter > 0 && !h.spurred && now.Sub(h.enqueued) >= q.spurAfter {
		// Its one chance: at the node's cap of round trips in flight,
		// it goes with the next round trip that ends.
		h.spurred = true
		if start = q.inflight < q.conc; start {
			q.inflight++
		}
	}
	q.setWatch(now)
	return expired, start
}

// setWatch sets the timer for the first instant the watch has work: the
// earliest deadline of the oldest calls, or sooner the instant the oldest
// waiting call will have waited spurAfter; no timer when no call waits or
// is sent. q.mu must be held.
func (q *queue) setWatch(now time.Time) {
	var at time.Time
	for _, c := range [...]*call{q.waiting.head, q.sent.head} {
		if c != nil && (at.IsZero() || c.deadline.Before(at)) {
			at = c.deadline
		}
	}
	if w := q.waiting.head; w != nil && q.spurAfter > 0 && !w.spurred {
		at = minTime(at, w.enqueued.Add(q.spurAfter))
	}
	if at.IsZero() {
		return
	}
	q.armed = at
	q.watch.Reset(max(at.Sub(now), 0))
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// close refuses every call from now on; the calls waiting are still sent.
// The channel it returns is closed once no round trip is in flight.
func (q *queue) close() <-chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		q.closed = true
		if q.inflight > 0 {
			q.idle = make(chan struct{})
		}
	}
	if q.idle != nil {
		return q.idle
	}
	idle := make(chan struct{})
	close(idle)
	return idle
}

// load returns the round trips in flight and the calls waiting, now.
func (q *queue) load() (inflight, waiting int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.inflight, q.waiting.n
}
