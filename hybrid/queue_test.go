package hybrid

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
	"github.com/hybridlimit/hybridlimit/remote"
)

// newTestQueue is a queue of conc round trips in flight and max calls
// waiting, spurring after spur, on a timer nobody reads.
func newTestQueue(t *testing.T, conc, max int, spur time.Duration) *queue {
	t.Helper()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	t.Cleanup(func() { timer.Stop() })
	return newQueue(conc, max, false, spur, timer)
}

// testCall is a call with a budget from now, not bound to a context.
func testCall(now time.Time, budget time.Duration) *call {
	return &call{deadline: now.Add(budget), budget: budget, done: make(chan struct{}, 1)}
}

// TestQueueTakesOldestFirstAndLeavesInPlace: calls are taken in their
// order, a call that leaves is gone from wherever it was, and one taken
// into a round trip can no longer leave.
func TestQueueTakesOldestFirstAndLeavesInPlace(t *testing.T) {
	q := newTestQueue(t, 1, 100, time.Second)
	now := time.Now()
	first := testCall(now, time.Second)
	if got := q.enter(first, true, now); got != enterInline {
		t.Fatalf("enter on an idle queue = %v, want enterInline", got)
	}
	calls := make([]*call, 6)
	for i := range calls {
		calls[i] = testCall(now, time.Second)
		if got := q.enter(calls[i], true, now); got != enterQueued {
			t.Fatalf("enter #%d behind an inline call = %v, want enterQueued", i, got)
		}
	}
	for _, i := range []int{0, 3, 5} { // the head, the middle, the tail
		if !q.leave(calls[i]) {
			t.Fatalf("leave(#%d) = false for a waiting call", i)
		}
		if q.leave(calls[i]) {
			t.Fatalf("leave(#%d) twice = true", i)
		}
	}
	if _, waiting := q.load(); waiting != 3 {
		t.Fatalf("%d calls waiting after 3 of 6 left, want 3", waiting)
	}
	if !q.release() {
		t.Fatal("release with calls waiting = false, want a worker started")
	}
	batch := q.next(nil, 2)
	if len(batch) != 2 || batch[0] != calls[1] || batch[1] != calls[2] {
		t.Fatalf("next(2) = %v, want #1, #2", batch)
	}
	if q.leave(calls[1]) {
		t.Fatal("leave of a call taken into a round trip = true")
	}
	q.settle(batch)
	if batch[0] == nil || batch[1] == nil {
		t.Fatalf("settle dropped calls the watch never answered: %v", batch)
	}
	batch = q.next(batch[:0], 2)
	if len(batch) != 1 || batch[0] != calls[4] {
		t.Fatalf("next(2) = %v, want #4", batch)
	}
	q.settle(batch)
	if batch = q.next(batch[:0], 2); len(batch) != 0 {
		t.Fatalf("next on an empty queue = %v", batch)
	}
	if inflight, waiting := q.load(); inflight != 0 || waiting != 0 {
		t.Fatalf("after the last round trip: %d in flight, %d waiting; want 0, 0", inflight, waiting)
	}
}

// TestQueueRefusesPastItsBound: a call beyond max is refused at once, and
// one that leaves makes room.
func TestQueueRefusesPastItsBound(t *testing.T) {
	q := newTestQueue(t, 1, 3, time.Second)
	now := time.Now()
	if got := q.enter(testCall(now, time.Second), true, now); got != enterInline {
		t.Fatalf("first enter = %v, want enterInline", got)
	}
	var waiting []*call
	for range 3 {
		c := testCall(now, time.Second)
		if got := q.enter(c, true, now); got != enterQueued {
			t.Fatalf("enter within the bound = %v, want enterQueued", got)
		}
		waiting = append(waiting, c)
	}
	if got := q.enter(testCall(now, time.Second), true, now); got != enterFull {
		t.Fatalf("enter past the bound = %v, want enterFull", got)
	}
	q.leave(waiting[1])
	if got := q.enter(testCall(now, time.Second), true, now); got != enterQueued {
		t.Fatalf("enter after one left = %v, want enterQueued", got)
	}
}

// TestQueueWatchAnswersWhatIsDue: the watch takes out the calls whose
// deadline passed, waiting or sent (a sent one is abandoned: its round
// trip must not answer it), and spurs a round trip for a call that waited
// spurAfter, once.
func TestQueueWatchAnswersWhatIsDue(t *testing.T) {
	q := newTestQueue(t, 4, 100, 10*time.Millisecond)
	now := time.Now()
	short, long := testCall(now, 20*time.Millisecond), testCall(now, time.Second)
	if got := q.enter(short, true, now); got != enterInline {
		t.Fatalf("enter = %v, want enterInline", got)
	}
	q.release() // nothing waits: the slot is given up
	for _, c := range []*call{short, long} {
		if got := q.enter(c, false, now); got != enterStart && got != enterQueued {
			t.Fatalf("enter of a deadline-bound call = %v, want it queued", got)
		}
	}
	sent := q.next(nil, 1) // short is carried by a round trip
	if len(sent) != 1 || sent[0] != short {
		t.Fatalf("next(1) = %v, want the first call", sent)
	}
	expired, start := q.due(now.Add(5*time.Millisecond), nil)
	if len(expired) != 0 || start {
		t.Fatalf("due at 5 ms = %v, %v; want nothing", expired, start)
	}
	expired, start = q.due(now.Add(10*time.Millisecond), nil)
	if len(expired) != 0 || !start {
		t.Fatalf("due at 10 ms = %v, spur %v; want a spur for the call waiting 10 ms", expired, start)
	}
	if _, start = q.due(now.Add(15*time.Millisecond), nil); start {
		t.Fatal("a second spur for the same call")
	}
	expired, _ = q.due(now.Add(20*time.Millisecond), nil)
	if len(expired) != 1 || expired[0] != short || !short.abandoned {
		t.Fatalf("due at 20 ms = %v (abandoned %v); want the sent call, abandoned", expired, short.abandoned)
	}
	q.settle(sent)
	if sent[0] != nil {
		t.Fatal("settle kept a call the watch answered")
	}
	expired, _ = q.due(now.Add(time.Second), nil)
	if len(expired) != 1 || expired[0] != long || long.abandoned {
		t.Fatalf("due at 1 s = %v; want the waiting call, not abandoned", expired)
	}
}

// stalledNode is a Limiter on one real redis-server whose first request
// is made inline and stalls (the server is paused); requests sent after it
// wait in the node's queue. resume lets the server answer again.
func stalledNode(t *testing.T, cfg Config) (lim *Limiter, resume func()) {
	t.Helper()
	srv := redistest.Start(t)
	cfg.Addrs = []string{srv.Addr()}
	cfg.Lease.Disable, cfg.DenyCache.Disable = true, true
	lim, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lim.Close() })
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	resume = func() {
		once.Do(func() {
			if err := srv.Resume(); err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(resume)
	return lim, resume
}

// waitQueued waits until n requests wait in lim's node's queue.
func waitQueued(t *testing.T, lim *Limiter, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		if got := lim.Stats().Nodes[0].Queued; got == n {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("%d requests queued, want %d", got, n)
		}
	}
}

type allowed struct {
	r   Result
	err error
	at  time.Time
}

// allowAsync runs Allow for key in a goroutine; its result comes on the
// channel.
func allowAsync(ctx context.Context, lim *Limiter, key string) <-chan allowed {
	out := make(chan allowed, 1)
	go func() {
		r, err := lim.Allow(ctx, key, PerMinute(100))
		out <- allowed{r, err, time.Now()}
	}()
	return out
}

// TestFullQueueAnsweredAtOnce: a request that finds its node's queue full
// is answered by the failure mode at once (ReasonQueueFull), and the ones
// queued before it are still decided by Redis.
func TestFullQueueAnsweredAtOnce(t *testing.T) {
	lim, resume := stalledNode(t, Config{Timeout: 5 * time.Second, Batch: BatchConfig{MaxInFlight: 1, MaxQueue: 3}})
	ctx := context.Background()
	inline := allowAsync(ctx, lim, "q:0")
	time.Sleep(20 * time.Millisecond) // it is in its round trip
	var queued []<-chan allowed
	for i := 1; i <= 3; i++ {
		queued = append(queued, allowAsync(ctx, lim, fmt.Sprintf("q:%d", i)))
	}
	waitQueued(t, lim, 3)
	r, err := lim.Allow(ctx, "q:full", PerMinute(100))
	if err != nil || r.Source != SourceFallback {
		t.Fatalf("Allow on a full queue = %+v, %v; want the fallback's answer", r, err)
	}
	if n := lim.Stats().Undecided[ReasonQueueFull]; n != 1 {
		t.Errorf("Undecided[queue-full] = %d, want 1", n)
	}
	resume()
	for i, ch := range append([]<-chan allowed{inline}, queued...) {
		if got := <-ch; got.err != nil || got.r.Source != SourceRemote {
			t.Errorf("request %d queued before the bound = %+v, %v; want Redis's answer", i, got.r, got.err)
		}
	}
}

// TestCancelledQueuedCallLeavesUnsent: a caller whose context ends while
// its request waits is answered at once, its request is gone from the
// queue, and Redis never decides it.
func TestCancelledQueuedCallLeavesUnsent(t *testing.T) {
	lim, resume := stalledNode(t, Config{Timeout: 5 * time.Second, Batch: BatchConfig{MaxInFlight: 1}})
	inline := allowAsync(context.Background(), lim, "c:inline")
	time.Sleep(20 * time.Millisecond)
	var kept, left []<-chan allowed
	var cancels []context.CancelFunc
	for i := range 6 {
		if i%2 == 0 {
			kept = append(kept, allowAsync(context.Background(), lim, fmt.Sprintf("c:kept:%d", i)))
			continue
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancels = append(cancels, cancel)
		left = append(left, allowAsync(ctx, lim, fmt.Sprintf("c:left:%d", i)))
	}
	waitQueued(t, lim, 6)
	for _, cancel := range cancels {
		cancel()
	}
	for i, ch := range left {
		got := <-ch
		if got.err != nil || got.r.Source != SourceFallback {
			t.Errorf("cancelled request %d = %+v, %v; want the fallback's answer", i, got.r, got.err)
		}
	}
	if q := lim.Stats().Nodes[0].Queued; q != 3 {
		t.Errorf("%d requests queued after 3 of 6 left, want 3", q)
	}
	resume()
	for i, ch := range append(kept, inline) {
		if got := <-ch; got.err != nil || got.r.Source != SourceRemote {
			t.Errorf("request %d = %+v, %v; want Redis's answer", i, got.r, got.err)
		}
	}
	st := lim.Stats()
	if n := st.Undecided[ReasonCancelled]; n != 3 {
		t.Errorf("Undecided[cancelled] = %d, want 3", n)
	}
	for i := 1; i < 6; i += 2 {
		r, err := lim.Peek(context.Background(), fmt.Sprintf("c:left:%d", i), PerMinute(100))
		if err != nil || r.Source != SourceRemote || r.Remaining != 99 {
			t.Errorf("Peek of a cancelled request's key = %+v, %v; want 99 remaining (Peek's unit aside): nothing charged", r, err)
		}
	}
}

// TestCloseSendsQueuedCalls: Close lets the requests already queued be
// decided (it waits for their round trip), rather than leaving them to
// wait out their budget for a round trip that never starts.
func TestCloseSendsQueuedCalls(t *testing.T) {
	lim, resume := stalledNode(t, Config{Timeout: 5 * time.Second, Batch: BatchConfig{MaxInFlight: 1}})
	inline := allowAsync(context.Background(), lim, "x:inline")
	time.Sleep(20 * time.Millisecond)
	var queued []<-chan allowed
	for i := range 3 {
		queued = append(queued, allowAsync(context.Background(), lim, fmt.Sprintf("x:%d", i)))
	}
	waitQueued(t, lim, 3)
	closed := make(chan error, 1)
	go func() { closed <- lim.Close() }()
	time.Sleep(50 * time.Millisecond)
	resume()
	for i, ch := range append(queued, inline) {
		if got := <-ch; got.err != nil || got.r.Source != SourceRemote {
			t.Errorf("request %d queued before Close = %+v, %v; want Redis's answer", i, got.r, got.err)
		}
	}
	if err := <-closed; err != nil {
		t.Errorf("Close = %v", err)
	}
	if _, err := lim.Allow(context.Background(), "x:after", PerMinute(100)); err != ErrClosed {
		t.Errorf("Allow after Close = %v, want ErrClosed", err)
	}
}

// TestSentCallAnsweredAtItsDeadline: a request a worker's round trip
// carries is answered by the failure mode at its own deadline
// (ReasonTimeout), not when the round trip, bounded by the Timeout from
// its sending, gives up.
func TestSentCallAnsweredAtItsDeadline(t *testing.T) {
	const timeout = 2 * time.Second
	lim, _ := stalledNode(t, Config{Timeout: timeout, Batch: BatchConfig{MaxInFlight: 2}})
	inline := allowAsync(context.Background(), lim, "s:inline")
	time.Sleep(20 * time.Millisecond)
	start := time.Now()
	sent := allowAsync(context.Background(), lim, "s:sent") // spurs a round trip of its own after timeout/8
	got := <-sent
	<-inline
	if got.err != nil || got.r.Source != SourceFallback {
		t.Fatalf("request on a stalled node = %+v, %v; want the fallback's answer", got.r, got.err)
	}
	if el := got.at.Sub(start); el > timeout+timeout/16 {
		t.Errorf("request answered %v after it was made, want by its deadline (%v)", el, timeout)
	}
	if n := lim.Stats().Nodes[0].Undecided[ReasonTimeout]; n < 2 {
		t.Errorf("Undecided[timeout] = %d, want 2 (the inline and the sent request)", n)
	}
}

// TestTimeoutAboveClientDefaults: a Limiter built from Addrs waits for a
// reply as long as its Timeout allows, beyond the clients' default socket
// timeouts (remote.DefaultReadTimeout).
func TestTimeoutAboveClientDefaults(t *testing.T) {
	lim, resume := stalledNode(t, Config{Timeout: 3 * time.Second})
	stall := 3 * remote.DefaultReadTimeout
	time.AfterFunc(stall, resume)
	r, err := lim.Allow(context.Background(), "t:slow", PerMinute(100))
	if err != nil || r.Source != SourceRemote {
		t.Fatalf("Allow on a node stalled %v with a Timeout of 3s = %+v, %v; want Redis's answer", stall, r, err)
	}
}

// BenchmarkQueueLeave: n calls enter a queue and every one leaves again, in
// an order unlike their arrival's (the callers of a slow node whose
// contexts end together). Entering and leaving cost the same per call
// whatever n is: a call leaves from its place in the list, where a scan of
// a slice cost O(n) per leave, under the node's mutex.
//
//	go test -run '^$' -bench QueueLeave ./hybrid/
func BenchmarkQueueLeave(b *testing.B) {
	for _, n := range []int{16, 1024, 4096} {
		b.Run(fmt.Sprintf("waiting=%d", n), func(b *testing.B) {
			timer := time.NewTimer(time.Hour)
			timer.Stop()
			q := newQueue(1, n, false, time.Second, timer)
			now := time.Now()
			busy := testCall(now, time.Hour)
			q.enter(busy, true, now) // inline: the rest wait
			calls := make([]*call, n)
			for i := range calls {
				calls[i] = testCall(now, time.Hour)
			}
			order := rand.New(rand.NewPCG(1, 2)).Perm(n)
			for b.Loop() {
				for _, c := range calls {
					q.enter(c, true, now)
				}
				for _, i := range order {
					q.leave(calls[i])
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/call")
		})
	}
}
