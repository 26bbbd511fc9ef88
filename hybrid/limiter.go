package hybrid

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hybridlimit/hybridlimit/limit"
	"github.com/hybridlimit/hybridlimit/local"
	"github.com/hybridlimit/hybridlimit/remote"
	"github.com/hybridlimit/hybridlimit/shard"
)

// Limiter enforces limits shared by every instance that uses the same Redis
// nodes. It is safe for concurrent use. Close it when done.
type Limiter struct {
	cfg      Config
	topo     topology
	mu       sync.Mutex // serializes AddNode, RemoveNode and Close
	fallback *local.Limiter
	deny     *denyCache // nil when disabled
	leases   *leases    // nil when disabled
	closed   atomic.Bool
	counts   counters
	workers  sync.WaitGroup // every node's goroutines: workers and watcher (roundtrip.go)
	noNode   atomic.Int64   // answers for keys the ring had no node for

	// Removed nodes, let go of after a grace period or at Close (guarded
	// by mu).
	retired      []*node
	retireTimers []*time.Timer
}

// New returns a Limiter over cfg's nodes. It connects to them and loads the
// scripts, waiting at most a second; a node that is down is answered by the
// failure mode until it comes up.
func New(cfg Config) (*Limiter, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	fb, err := local.New(local.Config{MaxKeys: cfg.MaxLocalKeys})
	if err != nil {
		return nil, fmt.Errorf("hybrid: fallback: %w", err)
	}
	l := &Limiter{cfg: cfg, fallback: fb}
	if !cfg.DenyCache.Disable {
		l.deny = newDenyCache(cfg.DenyCache.MaxKeys)
	}
	nodes := map[string]*node{}
	var names []string
	add := func(n Node, owned bool) error {
		if n.Name == "" || n.Client == nil {
			return fmt.Errorf("%w: name %q, client %v", ErrInvalidNode, n.Name, n.Client)
		}
		if _, dup := nodes[n.Name]; dup {
			return fmt.Errorf("%w: %q given twice", ErrInvalidNode, n.Name)
		}
		nd, err := l.newNode(n, owned)
		if err != nil {
			return err
		}
		nodes[n.Name] = nd
		names = append(names, n.Name)
		return nil
	}
	for _, n := range cfg.Nodes {
		if err := add(n, false); err != nil {
			closeNodes(nodes)
			return nil, err
		}
	}
	for _, a := range cfg.Addrs {
		o, name, err := remote.ParseAddr(a)
		if err != nil {
			closeNodes(nodes)
			return nil, fmt.Errorf("%w: %w", ErrInvalidNode, err)
		}
		c := newClient(o, cfg.Timeout)
		if err := add(Node{Name: name, Client: c}, true); err != nil {
			c.Close()
			closeNodes(nodes)
			return nil, err
		}
	}
	ring, err := shard.New(shard.Config{}, names...)
	if err != nil {
		closeNodes(nodes)
		return nil, fmt.Errorf("%w: %w", ErrInvalidNode, err)
	}
	l.topo.ring = ring
	if !cfg.Lease.Disable {
		l.leases = newLeases(cfg.Lease, cfg.Timeout, cfg.Logger, &l.topo) // last: its sweep runs until Close
	}
	l.topo.nodes.Store(&nodes)
	if err := l.warm(nodes); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// newClient is the client the Limiter builds for an address of
// Config.Addrs: remote.BoundOptions, with read and write timeouts of at
// least the Limiter's Timeout. The context of each round trip bounds it
// by the Timeout (ContextTimeoutEnabled); shorter socket timeouts would
// cut a round trip that Timeout allows.
func newClient(o *redis.Options, timeout time.Duration) *redis.Client {
	b := remote.BoundOptions(o)
	b.ReadTimeout, b.WriteTimeout = max(b.ReadTimeout, timeout), max(b.WriteTimeout, timeout)
	return redis.NewClient(b)
}

// NodeOf returns the name of the node that owns key now (as in
// NodeStats.Name), or "" while the ring has no node. A key's decisions,
// Peek, Refund and Reset go to that node; AddNode and RemoveNode move about
// 1/n of the keys.
func (l *Limiter) NodeOf(key string) string {
	name, _ := l.topo.ring.Locate(key)
	return name
}

// warmTimeout bounds the warm-up of New and AddNode.
const warmTimeout = time.Second

// warm connects to each node and loads the scripts, in parallel, so that
// the first requests do not pay for it inside their Timeout. A node that
// does not answer within warmTimeout is left to the breaker.
func (l *Limiter) warm(nodes map[string]*node) error {
	ctx, cancel := context.WithTimeout(context.Background(), warmTimeout)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var bad []error
	for _, nd := range nodes {
		for _, c := range nd.store.Caveats() {
			l.cfg.Logger.Warn("hybrid: an option of the node's client defeats the limiter: "+c.Problem, "node", nd.name, "option", c.Option, "fix", c.Fix)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Every script entry point, on reserved keys: an ACL that
			// forbids a command a script needs fails here, not at the
			// first request.
			err := nd.store.Probe(ctx)
			if errors.Is(err, remote.ErrMisconfigured) {
				mu.Lock()
				bad = append(bad, fmt.Errorf("node %q: %w", nd.name, err))
				mu.Unlock()
				return
			}
			if err == nil {
				l.checkEviction(ctx, nd)
			}
			if err == nil {
				// As many connections as round trips may be in flight:
				// a slow node must not pay a handshake per new one.
				err = nd.store.Connect(ctx, nd.conc)
			}
			if err != nil {
				l.cfg.Logger.Warn("hybrid: node not ready", "node", nd.name, "err", err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(bad...)
}

// checkEviction reads whether nd may evict limiter keys, and warns if so.
// A node where CONFIG is not allowed is left unknown, with a debug line.
func (l *Limiter) checkEviction(ctx context.Context, nd *node) {
	ev, err := nd.store.Eviction(ctx)
	if err != nil {
		l.cfg.Logger.Debug("hybrid: eviction policy unknown", "node", nd.name, "err", err)
		return
	}
	nd.eviction = ev
	if ev.MayEvict() {
		l.cfg.Logger.Warn("hybrid: node may evict limiter keys; an evicted key hands its client a fresh budget (run maxmemory-policy noeviction)",
			"node", nd.name, "maxmemory-policy", ev.Policy, "maxmemory", ev.MaxMemory)
	}
}

// newNode makes the node of n with the Limiter's settings.
func (l *Limiter) newNode(n Node, owned bool) (*node, error) {
	return newNode(n, owned, l.cfg.Prefix, nodeConfig{layout: l.cfg.Layout, timeout: l.cfg.Timeout, batch: l.cfg.Batch, breaker: l.cfg.Breaker, logger: l.cfg.Logger, workers: &l.workers})
}

// closeNodes releases what the Limiter holds of nodes: each Store's own
// connections (a Cluster's masters), and the clients it built.
func closeNodes(nodes map[string]*node) error {
	var errs []error
	for _, nd := range nodes {
		errs = append(errs, nd.close())
	}
	return errors.Join(errs...)
}

// Allow decides one unit for key against all the limits at once.
func (l *Limiter) Allow(ctx context.Context, key string, limits ...Limit) (Result, error) {
	return l.AllowN(ctx, key, 1, limits...)
}

// AllowN decides n units for key against all the limits at once, all or
// nothing, on the Redis node that owns the key. A request like one Redis
// denied moments ago (same key and limits, no smaller cost) is denied in
// process until that denial's RetryAfter passes (SourceDenyCache). When the
// node cannot decide (its breaker is open, the call fails, or no answer
// comes in time), the failure mode answers; Result.Source says which.
//
// One budget bounds the call, whatever path it takes (a lease, then a
// decision; a wait for a round trip): AllowN returns by Config.Timeout
// after it was called, or by ctx's deadline if sooner. When ctx ends while
// the request waits for a round trip or is carried by one, AllowN returns
// at once; a caller that makes its node's round trip itself (the node was
// idle) sees ctx's end when the round trip does, within the budget. Either
// way the failure mode answers (counted as ReasonCancelled, never against
// the node). The error is non-nil only for bad input (nothing is consumed)
// or after Close.
func (l *Limiter) AllowN(ctx context.Context, key string, n int64, limits ...Limit) (Result, error) {
	if l.closed.Load() {
		return Result{}, ErrClosed
	}
	// The leases answer from the units this instance holds, or decline
	// with their claim on the decision. (r and ok live at this level, not
	// in an if: the compiler then copies a lease's answer once fewer,
	// BenchmarkLeaseSpend.)
	var claim leaseClaim
	var r Result
	ok := false
	if l.leases != nil {
		r, ok = l.leases.answer(key, n, limits, &claim)
	}
	if ok {
		return l.count(r), nil
	}
	// The denial cache answers a request like one Redis denied.
	if d, at := l.deny.find(key, n, limits); d != nil {
		return l.count(d.answer(at)), nil
	}
	req, err := remote.NewDecision(key, n, limits...)
	if err != nil {
		return Result{}, err
	}
	// The node that owns the key decides, through the lease claim; when
	// it cannot, the failure mode answers.
	nd, shard, why, ok := l.topo.route(key)
	if !ok {
		return l.count(l.failure(opDecide, nd, answer{why: why}, key, n, limits)), nil
	}
	r, a := l.leases.decide(ctx, claim, nd, key, req, deadlineOf(ctx, time.Now(), l.cfg.Timeout), shard)
	if !a.ok {
		return l.count(l.failure(opDecide, nd, a, key, n, limits)), nil
	}
	if !r.Allowed {
		l.deny.put(key, n, limits, r, l.leases.remember(claim, r))
	}
	return l.count(r), nil
}

// isSuccess: redis.Nil is an answer, not a failure.
func isSuccess(err error) bool { return errors.Is(err, redis.Nil) }

// result is the Result of decision d, whose binding limit is limits[b].
func result(d limit.Decision, limits []Limit, b int, src Source) Result {
	return Result{
		Allowed:    d.Allowed,
		Limit:      limits[b],
		Binding:    b,
		Remaining:  d.Remaining,
		RetryAfter: d.RetryAfter,
		ResetAfter: d.ResetAfter,
		Delay:      d.Delay,
		Source:     src,
	}
}

func (l *Limiter) count(r Result) Result {
	l.counts.add(r.Source, r.Allowed)
	return r
}

// CheckLimits reports whether a request of n units against limits is one
// AllowN accepts, with the error AllowN would return: an error wrapping
// ErrInvalidLimit for no limits, more than MaxLimits, an invalid limit or
// one given twice (limits equal in canonical form); ErrInvalidCost for n
// below 1; ErrCostExceedsLimit for n above a limit's capacity. Use it to
// validate configuration before any request is made.
func CheckLimits(n int64, limits ...Limit) error { return remote.CheckLimits(n, limits...) }

// failOp is what the failure mode answers for.
type failOp uint8

const (
	opDecide failOp = iota // AllowN: n units, all or nothing
	opAtMost               // AllowAtMost: up to n units
	opPeek                 // Peek: what AllowN of one unit would answer
)

// failure answers, per the failure mode, a request that node nd (nil:
// none) could not decide, for the reason a gives, and counts and logs that
// reason. The caller counts the Result (Peek's are not counted). The
// answer is MaybeCharged when a says the request may have run.
func (l *Limiter) failure(op failOp, nd *node, a answer, key string, n int64, limits []Limit) Result {
	if nd == nil {
		l.noNode.Add(1)
	} else {
		nd.note(a.why, a.err)
	}
	r := l.fail(op, key, n, limits)
	r.MaybeCharged = a.unknown && op != opPeek
	return r
}

// fail is the failure mode's answer to a request of op.
func (l *Limiter) fail(op failOp, key string, n int64, limits []Limit) Result {
	switch l.cfg.OnFailure {
	case FailOpen:
		r := Result{Allowed: true, Limit: limits[0], Source: SourceFailOpen}
		if op != opPeek {
			r.Granted = n
		}
		return r
	case FailClosed:
		return Result{Limit: limits[0], RetryAfter: l.cfg.Breaker.OpenTimeout, Source: SourceFailClosed}
	}
	scaled := l.scaled(limits)
	var d limit.Decision
	var b int
	var granted int64
	var err error
	switch op {
	case opDecide:
		d, b, err = l.fallback.AllowAt(key, time.Now(), n, scaled...)
		granted = n
	case opAtMost:
		granted, d, b, err = l.fallback.LeaseAt(key, time.Now(), n, scaled...)
	case opPeek:
		d, b, err = l.fallback.Peek(key, scaled...)
	}
	if err != nil {
		// The share is smaller than the cost: deny for a period.
		return Result{Limit: limits[0], RetryAfter: limits[0].Period, Source: SourceFallback}
	}
	r := result(d, limits, b, SourceFallback)
	switch {
	case op == opAtMost:
		r.Granted, r.Allowed = granted, granted > 0
	case op == opDecide && r.Allowed:
		r.Granted = n
	}
	return r
}

// share scales a limit's rate and burst, never below 1.
func share(lim Limit, f float64) Limit {
	lim = lim.Canonical()
	lim.Rate = max(1, int64(float64(lim.Rate)*f))
	if lim.Burst > 0 {
		lim.Burst = max(1, int64(float64(lim.Burst)*f))
	}
	return lim
}

// Wait blocks until one unit for key is admitted by all the limits, or ctx
// ends. An admitted LeakyBucket request sleeps its Delay before returning.
// When the wait would pass ctx's deadline, Wait returns at once with an error
// that satisfies errors.Is(err, context.DeadlineExceeded).
func (l *Limiter) Wait(ctx context.Context, key string, limits ...Limit) error {
	return l.WaitN(ctx, key, 1, limits...)
}

// WaitN is Wait for n units.
func (l *Limiter) WaitN(ctx context.Context, key string, n int64, limits ...Limit) error {
	for {
		r, err := l.AllowN(ctx, key, n, limits...)
		if err != nil {
			return err
		}
		wait := r.RetryAfter
		if r.Allowed {
			wait = r.Delay
		} else {
			wait = max(wait, time.Millisecond)
		}
		if wait > 0 {
			if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait && !r.Allowed {
				return fmt.Errorf("hybrid: Wait(%d) needs %v, past the context deadline: %w", n, wait, context.DeadlineExceeded)
			}
			if err := sleep(ctx, wait); err != nil {
				return err
			}
		}
		if r.Allowed {
			return nil
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// AddNode adds a node to the ring: about 1/(N+1) of the keys move to it
// (their counters start afresh there). It first connects and loads the
// scripts, waiting at most a second. The Limiter does not close its client.
func (l *Limiter) AddNode(n Node) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return ErrClosed
	}
	old := *l.topo.nodes.Load()
	if n.Name == "" || n.Client == nil {
		return fmt.Errorf("%w: name %q, client %v", ErrInvalidNode, n.Name, n.Client)
	}
	if _, dup := old[n.Name]; dup {
		return fmt.Errorf("%w: %q is already in the ring", ErrInvalidNode, n.Name)
	}
	nd, err := l.newNode(n, false)
	if err != nil {
		return err
	}
	if err := l.warm(map[string]*node{n.Name: nd}); err != nil {
		return errors.Join(err, nd.close())
	}
	next := maps.Clone(old)
	next[n.Name] = nd
	l.topo.nodes.Store(&next) // before the ring routes to it
	if err := l.topo.ring.Add(n.Name); err != nil {
		l.topo.nodes.Store(&old)
		return errors.Join(fmt.Errorf("%w: %w", ErrInvalidNode, err), nd.close())
	}
	l.leases.rehome()
	return nil
}

// RemoveNode takes a node out of the ring; its keys move to the others.
// The calls already sent to it are answered (within 2 × Timeout); then
// the Limiter lets go of it: a node built from Config.Addrs has its client
// closed, and a Cluster node the connections the Limiter opened to its
// masters. Close does this at once for a node still being let go of.
func (l *Limiter) RemoveNode(name string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return ErrClosed
	}
	old := *l.topo.nodes.Load()
	nd, ok := old[name]
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownNode, name)
	}
	if err := l.topo.ring.Remove(name); err != nil {
		return fmt.Errorf("%w: %w", ErrUnknownNode, err)
	}
	next := maps.Clone(old)
	delete(next, name)
	l.topo.nodes.Store(&next)
	l.leases.rehome()
	l.retired = append(l.retired, nd)
	l.retireTimers = append(l.retireTimers, time.AfterFunc(2*l.cfg.Timeout, func() { nd.close() }))
	return nil
}

// Close lets the lease renewals in flight land, within the Timeout, and
// gives back the units leases hold; it answers the calls under way
// (those waiting for a round trip are still sent; no call starts after
// it began), and then releases the nodes: the clients the Limiter built
// are closed. It is idempotent; after it every call returns ErrClosed.
func (l *Limiter) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Swap(true) {
		return nil
	}
	l.leases.close() // gives the units back while the clients are open
	nodes := slices.Collect(maps.Values(*l.topo.nodes.Load()))
	for i, nd := range l.retired {
		l.retireTimers[i].Stop()
		nodes = append(nodes, nd)
	}
	for _, nd := range nodes {
		nd.q.close() // all at once: each drains in parallel
	}
	var errs []error
	for _, nd := range nodes {
		errs = append(errs, nd.close())
	}
	l.workers.Wait()
	return errors.Join(errs...)
}
