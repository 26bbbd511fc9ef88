package hybrid

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hybridlimit/hybridlimit/breaker"
	"github.com/hybridlimit/hybridlimit/remote"
)

// node is one Redis node of the ring, and everything about it: its Store,
// its breaker (one per master for a Cluster), its queue of calls and the
// round trips that carry them (roundtrip.go), and its counters. The
// Limiter and the leases ask a node (ask, direct) and get one answer back;
// a node never calls up into them.
type node struct {
	name   string
	client redis.UniversalClient
	owned  bool // built from Config.Addrs: closed by the Limiter
	store  *remote.Store
	cfg    nodeConfig
	br     *breaker.Breaker

	calls   atomic.Int64 // round trips
	errs    atomic.Int64
	batched atomic.Int64 // requests decided in round trips of more than one
	latency histogram    // round-trip times
	conc    int          // round trips that may be in flight at once
	rtt     atomic.Int64 // moving average of round-trip times, ns (roundtrip.go)

	q       *queue
	timer   *time.Timer   // the watch's (queue.go), run by the watcher goroutine
	stop    chan struct{} // closed to end the watcher
	expired []*call       // the watcher's storage

	undecided reasonCounts // answers by the failure mode, by reason
	failLog   failLog
	eviction  remote.Eviction // read by warm before the node is published

	// sharded: a Redis Cluster, whose masters fail one by one. Each has a
	// breaker of its own in shards (master address -> *breaker.Breaker),
	// made when a key first routes to it; br is then not used, so that one
	// dead master does not send every key of the cluster to the failure
	// mode.
	sharded bool
	shards  sync.Map

	closeOnce sync.Once
	closeErr  error
}

// nodeConfig is what a node needs of the Limiter's Config, copied when
// the node is made.
type nodeConfig struct {
	layout  remote.Layout
	timeout time.Duration
	batch   BatchConfig
	breaker BreakerConfig
	logger  *slog.Logger
	// workers counts the goroutines of every node, workers and
	// watchers: Close waits for them.
	workers *sync.WaitGroup
	// noYield: a worker does not yield between round trips. Only
	// BenchmarkColdDecisions sets it, to measure what the yield is worth.
	noYield bool
}

// answer is a node's answer to one request: Redis's, or why the failure
// mode must answer instead.
type answer struct {
	out remote.Result
	ok  bool   // out is Redis's answer
	why Reason // when !ok
	err error  // when !ok: the round trip's error, if any
	// unknown, when !ok: the request may have run on Redis, and its reply
	// did not come (it was sent, and its round trip timed out or lost its
	// connection, or its caller left while a round trip carried it). A
	// request not sent, or refused by Redis, ran nowhere.
	unknown bool
}

// newNode makes the node of n, with its Store, breaker and queue, and
// starts its watcher.
func newNode(n Node, owned bool, prefix string, cfg nodeConfig) (*node, error) {
	st, err := remote.New(n.Client, remote.Config{Prefix: prefix, Layout: cfg.layout})
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %w", ErrInvalidNode, n.Name, err)
	}
	nd := &node{name: n.Name, client: n.Client, owned: owned, store: st, cfg: cfg, sharded: st.Sharded()}
	if nd.br, err = nd.newBreaker(n.Name); err != nil {
		return nil, fmt.Errorf("%w: %q: %w", ErrInvalidNode, n.Name, err)
	}
	nd.conc = st.Concurrency() // with batching off, a round trip per connection
	spur := cfg.timeout / spurDivisor
	if cfg.batch.Disable {
		spur = 0
	} else {
		nd.conc = min(nd.conc, cfg.batch.MaxInFlight)
	}
	nd.timer = time.NewTimer(time.Hour)
	nd.timer.Stop()
	nd.q = newQueue(nd.conc, cfg.batch.MaxQueue, cfg.batch.Disable, spur, nd.timer)
	nd.stop = make(chan struct{})
	cfg.workers.Add(1)
	go nd.watcher(nd.stop)
	return nd, nil
}

// newBreaker returns a breaker with the node's breaker settings.
func (nd *node) newBreaker(name string) (*breaker.Breaker, error) {
	b := nd.cfg.breaker
	return breaker.New(name, breaker.Config{
		ConsecutiveFailures: b.ConsecutiveFailures,
		FailureRatio:        b.FailureRatio,
		OpenTimeout:         b.OpenTimeout,
		HalfOpenProbes:      b.HalfOpenProbes,
		Logger:              nd.cfg.logger,
	})
}

// shardOf returns the breaker of the cluster master that serves key, or nil
// when nd is not a cluster or the slot map cannot say.
func (nd *node) shardOf(key string) *breaker.Breaker {
	addr, err := nd.store.Shard(key)
	if err != nil || addr == "" {
		return nil
	}
	if v, ok := nd.shards.Load(addr); ok {
		return v.(*breaker.Breaker)
	}
	br, err := nd.newBreaker(nd.name + "/" + addr)
	if err != nil {
		return nil
	}
	v, _ := nd.shards.LoadOrStore(addr, br)
	return v.(*breaker.Breaker)
}

// breakerFor returns the breaker of key's Cluster master (nil on other
// nodes, or when the master is not known) and whether the breaker that
// guards key, that one or the node's, is open. While a master's is open
// the slot map is kept fresh (Store.Refresh, at most every 100 ms): a
// replica may be promoted any moment, and the key's next request must find
// the new master and its closed breaker.
func (nd *node) breakerFor(key string) (*breaker.Breaker, bool) {
	if !nd.sharded {
		return nil, nd.br.Open()
	}
	shard := nd.shardOf(key)
	if shard != nil && shard.Open() {
		nd.store.Refresh()
		return shard, true
	}
	return shard, false
}

// direct makes one call fn for key, outside the queue: through the
// breaker that guards key and by deadline, its outcome counted on that
// breaker.
func (nd *node) direct(ctx context.Context, key string, deadline time.Time, fn func(context.Context) error) answer {
	if ctx.Err() != nil {
		return answer{why: ReasonCancelled}
	}
	shard, open := nd.breakerFor(key)
	if open {
		return answer{why: ReasonBreakerOpen}
	}
	sent, err := nd.exchange(deadline, fn)
	a := outcome(sent, remote.Result{}, err)
	nd.shardOutcome(shard, a)
	return a
}

// deadlineOf is the instant by which a request that starts at now must be
// answered: timeout from now, or ctx's deadline if sooner.
func deadlineOf(ctx context.Context, now time.Time, timeout time.Duration) time.Time {
	d := now.Add(timeout)
	if cd, ok := ctx.Deadline(); ok && cd.Before(d) {
		return cd
	}
	return d
}

// note counts an answer of the failure mode for why and logs it, at most
// once per failLogEvery; the caller's cancellations and the answers of an
// open breaker are not logged.
func (nd *node) note(why Reason, err error) {
	nd.undecided[why].Add(1)
	if why == ReasonCancelled || why == ReasonBreakerOpen {
		// The caller left; or the breaker is open, which it logged when
		// it opened: its answers, millions a second while a node is down,
		// need no clock read and no shared count here.
		return
	}
	n := nd.failLog.missed.Add(1)
	now := time.Now().UnixNano()
	next := nd.failLog.next.Load()
	if now < next || !nd.failLog.next.CompareAndSwap(next, now+int64(failLogEvery)) {
		return
	}
	nd.failLog.missed.Add(-n)
	attrs := []any{"node", nd.name, "reason", why.String(), "answers", n}
	if err != nil {
		attrs = append(attrs, "err", err)
	}
	if why == ReasonConfig {
		nd.cfg.logger.Error("hybrid: node refuses the limiter (password, ACL or TLS); requests answered by the failure mode", attrs...)
		return
	}
	nd.cfg.logger.Warn("hybrid: requests answered by the failure mode", attrs...)
}

// close ends the node, once: no call enters its queue, the calls waiting
// are sent, and once no round trip is in flight its watcher stops and its
// Store and, if the Limiter built it, its client are closed.
func (nd *node) close() error {
	nd.closeOnce.Do(func() {
		<-nd.q.close()
		close(nd.stop)
		nd.closeErr = nd.store.Close()
		if nd.owned {
			nd.closeErr = errors.Join(nd.closeErr, nd.client.Close())
		}
	})
	return nd.closeErr
}
