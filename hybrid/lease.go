package hybrid

import (
	"context"
	"hash/maphash"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hybridlimit/hybridlimit/breaker"
	"github.com/hybridlimit/hybridlimit/remote"
)

// Leases serve hot keys in process. When this instance sees a (key, limits)
// more often than Lease.WarmRate per second (Lease.HotRate for a limit
// whose lease could hold fewer than minLeaseBatch units: see hot), it takes
// a batch of units from Redis in one atomic script (a lease request of
// remote's decide call: the units leave the shared budget at once) and
// spends them locally, lock-free. Before the batch runs out a background
// renewal takes the next one, sized to the instance's own recent demand
// (about Lease.RenewEvery of it) and capped at Lease.MaxFraction of the
// smallest capacity. A lease expires after
// Lease.TTL, or at the end of a window, whichever is first; the units left
// are given back to Redis on expiry and on Close. The limit is thus never
// exceeded by more than the units outstanding in leases at that moment,
// which Stats reports.
//
// A lease outlives the units Redis has: when a batch comes back short (the
// key is over its limit), the lease waits for the refill instead of
// ending. While it is dry its requests are denied in process, with a
// RetryAfter that counts to the next batch, and the next batch is asked
// for one poll later: a batch's refill time (ceiling units) at the rate of
// the limit that bound the short batch, or Redis's RetryAfter if longer.
// So a client hammering a key far over a fast limit costs a few Redis calls
// per poll across all instances, and every unit the limit refills is taken
// and spent.
//
// A LeakyBucket lease holds places in the queue: Redis reports the work
// ahead of the batch's first place, and each place k of the batch is one
// drain interval (Period/Rate) after the one before, so a request spent
// from the lease is held exactly as long as Redis would have held it. Its
// batches do not overlap (the next is asked when the lease is dry), so that
// places are spent in their order.

// hotSlots is the size of the table that counts requests per key hash to
// find hot keys: bounded memory whatever the number of keys (1 MB). It is
// a count-min sketch of two rows of hotSlots/2: a key counts in one slot of
// each row (two halves of one hash), and its demand is the smaller count,
// over the last two hotWindows. Two rows over two windows keep cold keys
// from looking warm (TestColdKeysDoNotLookWarm; DESIGN-NOTES, "The hot-key
// table is a count-min sketch over two windows", has the figures).
const hotSlots = 1 << 16

// hotRow is the number of slots in each row of the sketch.
const hotRow = hotSlots / 2

// hotWindow is the window over which a slot's rate is measured.
const hotWindow = 100 * time.Millisecond

// leases is the lease table of one Limiter. It asks nodes for batches and
// gives units back through them; it reads the topology to find a key's
// node, and never calls into the Limiter.
type leases struct {
	cfg     LeaseConfig
	timeout time.Duration // Config.Timeout: bounds renewals and give-backs
	log     *slog.Logger
	topo    *topology
	seed    maphash.Seed
	base    time.Time
	slots   [hotSlots]hotSlot
	entries sync.Map // key string -> *leaseEntry
	count   atomic.Int64
	lost    atomic.Int64 // units neither spent nor given back, for certain
	unknown atomic.Int64 // units of lease requests and give-backs of unknown outcome
	wg      sync.WaitGroup
	ctx     context.Context // cancelled by Close: the sweep ends, and no renewal starts
	cancel  context.CancelFunc

	gate   sync.RWMutex // go() holds it shared, close exclusively
	closed bool         // guarded by gate: no goroutine starts after close
}

// goDo runs f in a goroutine that close waits for, unless close has begun;
// then it runs f in the caller's goroutine when sync is set, or not at all.
// It reports whether it started the goroutine.
func (ls *leases) goDo(sync bool, f func()) bool {
	ls.gate.RLock()
	if ls.closed {
		ls.gate.RUnlock()
		if sync {
			f()
		}
		return false
	}
	ls.wg.Add(1)
	ls.gate.RUnlock()
	go func() {
		defer ls.wg.Done()
		f()
	}()
	return true
}

// hotSlot counts the requests of the keys hashing to it in one window.
//
// A slot of the first row also counts the leases in entries whose key
// falls in it (present): a request whose slot holds none is not looked up
// in entries, whose lookup hashes the key again, as an interface. 16 bytes,
// 1 MB for the table, where 64-bit counts and a table of lease counts of
// its own took 1.75 MB (no faster: bench -instances 1 -workload uniform
// measured the same CPU per decision either way).
type hotSlot struct {
	window  atomic.Uint32 // index of the window counted, modulo 2^32
	n       atomic.Int32
	prev    atomic.Int32 // the count of the window before
	present atomic.Int32 // first row: leases in entries of keys in this slot
}

// leaseEntry is the lease of one key for one set of limits.
//
// Its invariant: units is the only count that spends change (lock-free: a
// hot key spends millions a second); everything else known of the lease is
// the last batch that landed (batch), an immutable record replaced whole.
// One goroutine at a time lands a batch, the taker and then each renewal;
// renewal is non-nil while one is in flight, and its channel is closed
// when it ends, so that Reset can wait for it.
type leaseEntry struct {
	req      remote.Request // the key and limits, kept (Request.Keep)
	node     *node
	windowed bool    // a FixedWindow limit: the lease ends with the window
	polls    []int64 // per limit, ns for a batch of ceiling units to refill at its rate
	// tick is the drain interval of one place of a LeakyBucket lease (the
	// longest of the request's LeakyBucket limits); 0: no LeakyBucket.
	tick int64

	// units is on a cache line of its own: every spend writes it, from
	// every processor, and the fields around it are read by every spend;
	// sharing their line, each write made the other processors' reads
	// miss (BenchmarkLeaseSpend).
	_     [64]byte
	units atomic.Int64 // units left to spend; ended when negative (deadUnits)
	_     [56]byte

	batch   atomic.Pointer[leaseBatch]
	renewal atomic.Pointer[renewal]

	// Written only by requests for the key with other limits (see idle).
	probeUnits atomic.Int64
	probeAt    atomic.Int64 // ns since base, +1 (0: never probed)
}

// deadUnits is an ended lease's units: below any count a spend or a batch
// could bring back to zero or more.
const deadUnits = math.MinInt64 / 2

// take takes n units from e in one step, if it holds that many: the units
// never go below zero, so that no spend's undoing can bring back units an
// ending took (a spend that subtracted first and added back when it went
// below zero could re-add, on an ended lease, units its ending had taken,
// and a renewal then gave Redis units it never held). It returns the units
// left.
func (e *leaseEntry) take(n int64) (left int64, ok bool) {
	for {
		u := e.units.Load()
		if u < n {
			return u, false
		}
		if e.units.CompareAndSwap(u, u-n) {
			return u - n, true
		}
	}
}

// add adds the n units of a batch that landed to e, and reports false,
// adding nothing, when e has ended: the batch's units are then the
// lander's to give back.
func (e *leaseEntry) add(n int64) bool {
	for {
		u := e.units.Load()
		if u < 0 {
			return false
		}
		if e.units.CompareAndSwap(u, u+n) {
			return true
		}
	}
}

// end ends e and returns the units it held, once: an ended lease holds
// none, and neither a spend nor a batch adds any.
func (e *leaseEntry) end() int64 {
	return max(e.units.Swap(deadUnits), 0)
}

// leaseBatch is what a lease knows of its last batch: what was asked for
// and what Redis answered. Times are ns since the table's base.
type leaseBatch struct {
	size    int64 // units asked for
	given   int64 // units left just after it landed
	took    int64 // when it landed
	at      int64 // Redis time of the batch, µs (0: none has landed yet)
	granted int64 // units Redis gave with it
	// since is the Redis time of the oldest batch whose units the lease
	// may still hold (spends take the oldest first): a give-back of what
	// it holds returns the units charged from then on. A SlidingWindowLog
	// removes that many events charged at or after it; the time of the
	// last batch alone left the older batches' units in the log, and
	// never given back (TestGiveBackSpansBatches).
	since     int64
	binding   int   // the binding limit's index
	expires   int64 // the lease ends then
	resetAt   int64 // the binding limit is full again then
	remaining int64 // the binding limit's remaining, as Redis answered
	// short is set while Redis gives less than asked (the key is over its
	// limit): a dry lease then denies in process, and no batch is asked
	// for before waitUntil, when a batch has refilled.
	short     bool
	waitUntil int64
	// LeakyBucket: when the work ahead of the batch's first place has
	// drained, and when its last place has.
	slot0, slotEnd int64
}

// renewal is a batch in flight; done is closed when it has landed or
// failed.
type renewal struct{ done chan struct{} }

// startRenewal marks a batch in flight for e, and returns it; nil when one
// is in flight already.
func (e *leaseEntry) startRenewal() *renewal {
	if e.renewal.Load() != nil {
		return nil // the common case while spends call renew: no allocation
	}
	r := &renewal{done: make(chan struct{})}
	if !e.renewal.CompareAndSwap(nil, r) {
		return nil
	}
	return r
}

// endRenewal ends r, the batch in flight.
func (e *leaseEntry) endRenewal(r *renewal) {
	e.renewal.Store(nil)
	close(r.done)
}

func newLeases(cfg LeaseConfig, timeout time.Duration, log *slog.Logger, topo *topology) *leases {
	ctx, cancel := context.WithCancel(context.Background())
	ls := &leases{cfg: cfg, timeout: timeout, log: log, topo: topo, seed: maphash.MakeSeed(), base: time.Now(), ctx: ctx, cancel: cancel}
	ls.goDo(false, ls.sweep)
	return ls
}

// sweepEvery is how often, in TTLs, the lease table is swept for leases
// past their TTL that no request came to end.
const sweepEvery = 2

// sweep ends, every TTL/sweepEvery, the leases past their TTL: a key
// nobody asks for any more gives its units back.
func (ls *leases) sweep() {
	t := time.NewTicker(ls.cfg.TTL / sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ls.ctx.Done():
			return
		case <-t.C:
		}
		now := ls.now()
		ls.entries.Range(func(k, v any) bool {
			if e := v.(*leaseEntry); now >= e.batch.Load().expires {
				ls.expire(k.(string), e)
			}
			return true
		})
	}
}

// rehome ends the leases whose key the ring now routes to another node
// (after AddNode or RemoveNode): their units came from a node that no
// longer decides the key. Leases off (ls nil): nothing.
func (ls *leases) rehome() {
	if ls == nil {
		return
	}
	ls.entries.Range(func(k, v any) bool {
		if e := v.(*leaseEntry); ls.topo.locate(k.(string)) != e.node {
			ls.expire(k.(string), e)
		}
		return true
	})
}

// idle reports whether e has not been spent for 1/HotRate, as seen by the
// requests for its key with other limits: such a (key, limits) is no
// longer hot, and its lease may make way for the new one. A lease still
// spent keeps its place (two sets of limits asked in turn would otherwise
// take and give back a lease at every request).
func (ls *leases) idle(e *leaseEntry, now int64) bool {
	u := e.units.Load()
	at := e.probeAt.Load()
	if at == 0 || e.probeUnits.Load() != u {
		e.probeUnits.Store(u)
		e.probeAt.Store(now + 1)
		return false
	}
	return float64(now+1-at) >= float64(time.Second)/ls.cfg.HotRate
}

func (ls *leases) now() int64 { return int64(time.Since(ls.base)) }

// newEntry returns a lease of req's key and limits from nd, ceiling units at most per
// batch.
func newEntry(nd *node, req remote.Request, ceiling int64) *leaseEntry {
	e := &leaseEntry{req: req.Keep(nil), node: nd}
	for _, lim := range e.req.Limits() {
		e.windowed = e.windowed || lim.Algorithm == FixedWindow
		e.polls = append(e.polls, int64(time.Duration(ceiling)*lim.Period/time.Duration(lim.Rate)))
		if lim.Algorithm == LeakyBucket {
			e.tick = max(e.tick, int64(lim.Period/time.Duration(lim.Rate)))
		}
	}
	return e
}

// landed publishes the batch that Redis answered with lease at now, of
// want units asked for, given being the units left with it: its binding
// limit, Redis time and durations, and since, the time of the oldest batch
// whose units it may hold. A batch short of want makes the lease wait for
// the refill. Only the goroutine landing a batch calls it.
func (ls *leases) landed(e *leaseEntry, lease remote.Result, want, given, now int64) *leaseBatch {
	prev := e.batch.Load()
	b := &leaseBatch{
		size:      want,
		given:     given,
		took:      now,
		at:        lease.At,
		granted:   lease.Granted,
		since:     lease.At,
		binding:   lease.Binding,
		expires:   now + int64(ls.ttl(lease.ResetAfter, e.req.Limits())),
		resetAt:   now + int64(lease.ResetAfter),
		remaining: lease.Remaining,
		slot0:     now + int64(lease.Delay),
	}
	switch held := given - lease.Granted; {
	case held <= 0 || prev.at == 0:
	case held <= prev.granted:
		b.since = prev.at // what is held came with the batch before
	default:
		b.since = prev.since
	}
	if e.tick > 0 {
		// A batch's places follow the previous batch's in Redis's queue.
		// Each slot0 errs late by its reply's travel; a batch answered
		// later than the next would let the next one's places in among
		// its own, and the output would outrun the rate by the
		// difference (TestLeaseLeakyBucketKeepsShaping saw 0.6 ms).
		b.slot0 = max(b.slot0, prev.slotEnd)
		b.slotEnd = b.slot0 + lease.Granted*e.tick
	}
	if lease.Granted < want {
		b.short = true
		// The limit that bound the batch refills it; a slower one that did
		// not bind (8/min beside 5/s) would hold the key back for its own
		// refill, seconds, while the binding one refills in a fraction.
		poll := e.polls[min(max(lease.Binding, 0), len(e.polls)-1)]
		b.waitUntil = now + max(poll, int64(lease.RetryAfter))
	}
	e.batch.Store(b)
	return b
}

// dry answers a request that a waiting lease cannot serve: denied, until
// the next batch can have arrived (the wait for the refill, then a round
// trip).
func (ls *leases) dry(bt *leaseBatch, e *leaseEntry, limits []Limit, now int64) Result {
	retry := time.Duration(max(bt.waitUntil-now, 0) + e.node.rtt.Load())
	retry = max(retry, time.Microsecond)
	reset := max(time.Duration(bt.resetAt-now), retry)
	b := bt.binding
	return Result{Limit: limits[b], Binding: b, RetryAfter: retry, ResetAfter: reset, Source: SourceDenyCache}
}

// delay is how long to hold a request of n places spent from the
// LeakyBucket lease e, of last batch b, at now, left places remaining
// after it: until the work ahead of its first place, the k-th of the
// batch, has drained.
func (e *leaseEntry) delay(b *leaseBatch, left, n, now int64) time.Duration {
	if e.tick == 0 {
		return 0 // not a LeakyBucket
	}
	k := b.given - left - n
	return time.Duration(max(b.slot0+k*e.tick-now, 0))
}

// demandOf counts a request for the key of hash h (leases.hash) and
// returns the key's recent rate, in requests per second, as seen through
// its slots: the smaller of its two slots' counts over this window and the
// one before (see hotSlots). At a window's start it is up to half the
// key's rate, never more.
func (ls *leases) demandOf(h uint64) float64 {
	w := uint32(ls.now() / int64(hotWindow))
	a := ls.slots[h%hotRow].count(w)
	b := ls.slots[hotRow+(h>>32)%hotRow].count(w)
	return float64(min(a, b)) / (2 * hotWindow.Seconds())
}

// count counts a request in window w and returns the slot's count over w
// and the window before.
func (s *hotSlot) count(w uint32) int32 {
	if old := s.window.Load(); old != w && s.window.CompareAndSwap(old, w) {
		if w == old+1 {
			s.prev.Store(s.n.Swap(0))
		} else {
			s.prev.Store(0)
			s.n.Store(0)
		}
	}
	return s.n.Add(1) + s.prev.Load()
}

// hash is key's hash, which places it in the hot-key table.
func (ls *leases) hash(key string) uint64 { return maphash.String(ls.seed, key) }

// stored counts a lease just stored in entries for key; deleted one just
// deleted.
func (ls *leases) stored(key string) {
	ls.count.Add(1)
	ls.slots[ls.hash(key)%hotRow].present.Add(1)
}

func (ls *leases) deleted(key string) {
	ls.slots[ls.hash(key)%hotRow].present.Add(-1)
	ls.count.Add(-1)
}

// leaseClaim is what the lease stage keeps of a request it declined: no
// pointer, so that answer fills it with no write barrier.
type leaseClaim struct {
	leased bool   // the request is one leases serve (leases are on, a cost of 1 or more)
	h      uint64 // the key's hash in the hot-key table
	held   bool   // the key has a live lease (ran dry, a renewal on its way, or other limits)
}

// decide has nd decide req, the request for key that answer declined with
// claim c (key apart: taken from req, it would make req's limits escape).
// A hot key that has no lease takes one, and the request is charged from
// it (take). Otherwise the node decides req as any request; when Redis
// denies it, a batch that landed for the key while it was out serves it
// (an instance never denies a request while it holds units of its key);
// and the Remaining of a leased key counts the units this instance holds.
// a says why the failure mode must answer when !a.ok; the budget is the
// call's, so a failed take is not followed by a decision. Leases off (ls
// nil), or a request they do not serve: the node decides, nothing more.
func (ls *leases) decide(ctx context.Context, c leaseClaim, nd *node, key string, req remote.Request, deadline time.Time, shard *breaker.Breaker) (r Result, a answer) {
	n, limits := req.N(), req.Limits()
	if !c.leased {
		ls = nil // leases off, or a request they do not serve
	}
	if ls != nil && !c.held {
		if rate := ls.demandOf(c.h); ls.hot(rate, limits) {
			r, st, a := ls.take(ctx, deadline, nd, req, rate)
			if st != takeSkipped {
				return r, a
			}
		}
	}
	if a = nd.ask(ctx, req, deadline, shard); !a.ok {
		return Result{}, a
	}
	r = result(a.out.Decision, limits, a.out.Binding, SourceRemote)
	if r.Allowed {
		r.Granted = n
	}
	if ls == nil {
		return r, a
	}
	if !r.Allowed {
		var again leaseClaim
		if lr, served := ls.answer(key, n, limits, &again); served && lr.Allowed {
			return lr, a
		}
	}
	if c.held {
		// Redis counts the units this instance's lease holds as spent;
		// they are the caller's budget still. Of Redis's two answers,
		// the request's and the lease's last batch's, the later has the
		// smaller remaining (but for what refilled between them): a
		// batch run after the request in the same round trip is held
		// here now, and must not count twice.
		units, batch := ls.holding(key, limits, r.Binding)
		base := r.Remaining
		if batch >= 0 {
			base = min(base, batch)
		}
		r.Remaining = min(base+units, r.Limit.Capacity())
	}
	return r, a
}

// remember is how long the denial cache may answer with r, a denial
// decide returned for a request of claim c: its RetryAfter, or, while the
// key holds a lease that ran dry, no longer than a renewal takes (units
// other instances give back may come before RetryAfter).
func (ls *leases) remember(c leaseClaim, r Result) time.Duration {
	if c.held {
		return min(r.RetryAfter, ls.cfg.RenewEvery)
	}
	return r.RetryAfter
}

// answer is the lease stage of a request: it answers from the units this
// instance holds for the key (SourceLease), or denies while the key's lease
// waits for the refill (SourceDenyCache); otherwise it declines, and c is
// its claim on the decision, which decide makes: the key's hash, and held, a
// live lease for the key (ran dry, a renewal on its way, or one for other
// limits), whose request then goes to Redis as usual rather than taking
// another lease. A lease serves only requests with the limits it was taken
// for and a cost from 1 to the units held, so what it answers is valid
// input: it is asked before validation, which took a tenth of a lease
// answer's time. Leases off (ls nil), or a cost below 1: it declines, and c
// stays the zero claim. It allocates only to start a renewal or to end a
// lease, and it does not block, but once Close has begun: a lease it ends
// then gives its units back in the caller's goroutine (goDo), a round trip
// bounded by the Timeout.
func (ls *leases) answer(key string, n int64, limits []Limit, c *leaseClaim) (Result, bool) {
	if ls == nil || n < 1 {
		return Result{}, false
	}
	h := ls.hash(key)
	c.leased, c.h = true, h
	if ls.slots[h%hotRow].present.Load() == 0 {
		// No lease in the key's slot (most cold keys): no lookup. A lease
		// stored just now may be missed; its key then goes to Redis once.
		return Result{}, false
	}
	v, ok := ls.entries.Load(key)
	if !ok {
		return Result{}, false
	}
	e := v.(*leaseEntry)
	now := ls.now()
	bt := e.batch.Load()
	if !slices.Equal(e.req.Limits(), limits) {
		// The key is leased under other limits (a rule changed, or the
		// key is asked under two sets). A lease past its TTL or no longer
		// spent is given back, and this request may lease its own.
		if now >= bt.expires || ls.idle(e, now) {
			ls.expire(key, e)
			return Result{}, false
		}
		c.held = true
		return Result{}, false
	}
	if now >= bt.expires {
		ls.expire(key, e)
		return Result{}, false
	}
	if n > bt.size {
		// More than a batch: Redis decides it, and it starts no renewal
		// (it may be bad input, which must take nothing).
		c.held = true
		return Result{}, false
	}
	left, ok := e.take(n)
	if !ok {
		c.held = true // not set on the spend's path, the hottest
		if bt.short {
			// Over the limit: Redis has nothing until the refill. Once it
			// is due, one request asks for the next batch and is decided
			// by Redis itself, so that a request made at a dry answer's
			// RetryAfter finds the refill; the others wait for the batch.
			if now >= bt.waitUntil && ls.renew(key, e) {
				return Result{}, false
			}
			return ls.dry(bt, e, limits, now), true
		}
		ls.renew(key, e)
		return Result{}, false
	}
	if e.tick == 0 && left < bt.size/2 && (!bt.short || now >= bt.waitUntil) {
		ls.renew(key, e)
	}
	// What Redis would answer: the binding limit's remaining as it last
	// said, with the units this instance holds and has not spent (never
	// the lease's units alone), and its time until full from then. The
	// batch is read again after the units: a renewal publishes its batch
	// before it adds its units, so this one is at least as new as left
	// (the batch read above, with left holding the new units, counted
	// them twice: Remaining read the whole limit).
	bt = e.batch.Load()
	b := bt.binding
	return Result{Allowed: true, Granted: n, Limit: limits[b], Binding: b, Remaining: min(bt.remaining+left, limits[b].Capacity()),
		ResetAfter: time.Duration(max(bt.resetAt-now, 0)), Delay: e.delay(bt, left, n, now), Source: SourceLease}, true
}

// size is the batch to ask for from nd: about RenewEvery of the demand, or
// twice the node's recent round trip of it if longer (a renewal starts at
// half a batch, and must arrive before the rest is spent: on a slow node
// a lease otherwise ran dry at every renewal, and its requests waited for
// Redis); for a warm key, whose RenewEvery of demand is a unit or two, up
// to minLeaseBatch units if half a TTL of its demand covers them, so that
// a batch serves several requests; at least the request, at most
// MaxFraction of the smallest capacity.
func (ls *leases) size(nd *node, rate float64, n int64, limits []Limit) int64 {
	cover := max(ls.cfg.RenewEvery, 2*time.Duration(nd.rtt.Load()))
	want := int64(rate * cover.Seconds())
	want = max(want, min(minLeaseBatch, int64(rate*ls.cfg.TTL.Seconds()/2)))
	return min(max(want, n), ls.ceiling(limits))
}

// minLeaseBatch: a warm key's batch holds up to this many units, if half
// a lease's TTL of its demand covers them (see size); a key is leased from
// WarmRate only if its lease may hold that many (see hot).
const minLeaseBatch = 8

// minHotBatch: a key is leased at all only if its lease may hold this many
// units. A lease of one unit saves no round trip (every request renews
// it), and only withholds: with MaxFraction at its default of 1 %, limits
// of a capacity under 200 are decided by Redis request by request, and a
// burst on them admits exactly the limit.
const minHotBatch = 2

// hot reports whether a key with limits and a demand of rate requests a
// second is leased: from HotRate if its lease may hold minHotBatch units,
// or from WarmRate if it may hold minLeaseBatch. On the cold path, below
// WarmRate, it reads no limit.
func (ls *leases) hot(rate float64, limits []Limit) bool {
	lc := &ls.cfg
	if rate < lc.WarmRate {
		return false
	}
	c := ls.ceiling(limits)
	return rate >= lc.HotRate && c >= minHotBatch || c >= minLeaseBatch
}

// ceiling is the most units a key's lease may hold: MaxFraction of the
// smallest capacity, rounded down, for every algorithm. It bounds what a
// lease may withhold from the other instances at any moment (what it
// holds and no request of its own is waiting for), as it bounds what the
// limit may be exceeded by.
func (ls *leases) ceiling(limits []Limit) int64 {
	return ls.fraction(minCapacity(limits))
}

// fraction is MaxFraction of capacity c, rounded down.
func (ls *leases) fraction(c int64) int64 {
	return int64(float64(c) * ls.cfg.MaxFraction)
}

// minCapacity is the smallest capacity of limits.
func minCapacity(limits []Limit) int64 {
	c := limits[0].Capacity()
	for _, lim := range limits[1:] {
		c = min(c, lim.Capacity())
	}
	return c
}

// takeStatus is how take ended.
type takeStatus uint8

const (
	// taken: the request was answered (from the new lease, or denied by
	// Redis, which had nothing to give).
	taken takeStatus = iota
	// takeSkipped: no lease was taken; the request is decided as usual.
	takeSkipped
	// takeFailed: the round trip failed; the failure mode answers.
	takeFailed
)

// take leases a first batch for a hot key and charges the request n from
// it, within the request's deadline. When Redis gives fewer than n units
// (they are given back) the request is decided as usual. The answer is
// the round trip's: ok when taken, why it failed when it failed.
func (ls *leases) take(ctx context.Context, deadline time.Time, nd *node, req remote.Request, rate float64) (Result, takeStatus, answer) {
	n, limits := req.N(), req.Limits()
	want := ls.size(nd, rate, n, limits)
	if want < n || n < 1 {
		return Result{}, takeSkipped, answer{}
	}
	// The lease is in the table before its first batch is asked for, dry
	// and renewing: the callers that find the hot key meanwhile go to Redis
	// as for a renewal in flight, instead of each taking a batch (64
	// callers did, and gave back what they could not keep, after the
	// lease that Redis had nothing left for had begun to wait for the next
	// window: nine units in ten of every window sat in Redis unused).
	// Copies: the caller's key and limits must not escape.
	e := newEntry(nd, req, ls.fraction(minCapacity(limits)))
	e.batch.Store(&leaseBatch{size: want, expires: ls.now() + int64(ls.cfg.TTL)})
	rn := e.startRenewal()
	k := e.req.Key()
	if _, loaded := ls.entries.LoadOrStore(k, e); loaded {
		return Result{}, takeSkipped, answer{}
	}
	ls.stored(k)
	defer e.endRenewal(rn)
	lr, _ := req.Lease(want) // want >= n >= 1
	a := nd.ask(ctx, lr, deadline, nil)
	lease := a.out
	if !a.ok || lease.Granted > 0 && lease.Granted < n {
		if ls.entries.CompareAndDelete(k, e) {
			ls.deleted(k)
		}
		if !a.ok {
			ls.unsure(k, a, want)
			return Result{}, takeFailed, a
		}
		at, units := lease.At, lease.Granted
		ls.goDo(true, func() { ls.giveBack(nd, e.req, at, units) })
		return Result{}, takeSkipped, answer{}
	}
	// A lease, or, when Redis has nothing to give, one that waits for the
	// refill: the requests that follow are denied in process.
	granted := max(lease.Granted-n, 0)
	bt := ls.landed(e, lease, want, granted, ls.now())
	if e.tick > 0 {
		// The taker holds the batch's first n places: the units left are
		// places n and on.
		c := *bt
		c.slot0 += n * e.tick
		e.batch.Store(&c)
	}
	// Ended meanwhile (rehome expires leases while they are being taken):
	// the units go back, as a renewal's do, rather than sit in a lease
	// nobody can find.
	if left, _ := ls.keep(k, e, granted); left > 0 {
		at := lease.At
		ls.goDo(true, func() { ls.giveBack(nd, e.req, at, left) })
	}
	if lease.Granted == 0 {
		// Redis has nothing to give: that is a denial.
		return result(lease.Decision, limits, lease.Binding, SourceRemote), taken, a
	}
	return Result{Allowed: true, Granted: n, Limit: limits[lease.Binding], Binding: lease.Binding, Remaining: lease.Remaining + granted,
		ResetAfter: lease.ResetAfter, Delay: lease.Delay, Source: SourceLease}, taken, a
}

// ttl is Lease.TTL, shortened to the end of the window for FixedWindow,
// whose units count only in the window they were taken in.
func (ls *leases) ttl(resetAfter time.Duration, limits []Limit) time.Duration {
	ttl := ls.cfg.TTL
	for _, lim := range limits {
		if lim.Algorithm == FixedWindow && resetAfter > 0 {
			ttl = min(ttl, resetAfter)
		}
	}
	return ttl
}

// renew starts a background renewal of e, unless one is in flight or
// close has begun, and reports whether it started one.
func (ls *leases) renew(key string, e *leaseEntry) bool {
	if ls.ctx.Err() != nil {
		return false
	}
	rn := e.startRenewal()
	if rn == nil {
		return false
	}
	if !ls.goDo(false, func() {
		defer e.endRenewal(rn)
		ls.renewNow(key, e)
	}) {
		e.endRenewal(rn) // close has begun: no renewal was started
		return false
	}
	return true
}

// renewNow asks e's node for e's next batch, in the renewal's goroutine,
// and lands it.
func (ls *leases) renewNow(key string, e *leaseEntry) {
	if ls.topo.locate(key) != e.node {
		// The key moved to another node: its units count there no
		// more, and a renewal would go to the wrong node.
		ls.expire(key, e)
		return
	}
	now := ls.now()
	left := e.units.Load()
	bt := e.batch.Load()
	if left < 0 || bt.short && now < bt.waitUntil {
		return // ended; or the refill is not there yet
	}
	// The demand since the last batch: what it has spent, per second.
	spent := bt.given - left
	rate := float64(max(spent, 1)) / max(time.Duration(now-bt.took), time.Millisecond).Seconds()
	// What is held, plus the batch, stays within MaxFraction; over the
	// limit, the demand is more than any batch.
	want := ls.ceiling(e.req.Limits()) - max(left, 0)
	if !bt.short {
		want = min(ls.size(e.node, rate, 1, e.req.Limits()), want)
	}
	if e.windowed && !bt.short {
		// Units of a window are lost when it ends: take no more than
		// the demand can spend before then (over the limit, it spends
		// whatever comes).
		rest := time.Duration(bt.expires - now)
		want = min(want, int64(rate*rest.Seconds())-max(left, 0))
	}
	if want < 1 {
		return
	}
	req, _ := e.req.Lease(want) // want >= 1
	// Not ls.ctx, which Close cancels: a renewal that was sent may have
	// run, and only its landing gives its batch back. Close waits for it,
	// bounded by the Timeout, and gives it back with the rest.
	a := e.node.ask(context.Background(), req, time.Now().Add(ls.timeout), nil)
	if !a.ok {
		ls.unsure(key, a, want)
		return
	}
	// Nothing, or less than asked: the key is over its limit, and the
	// lease waits for the refill (landed) rather than ending. The batch
	// is published before its units can be spent: where its places fall
	// (a LeakyBucket's slot0, given) must be known first.
	lease := a.out
	bt = ls.landed(e, lease, want, max(e.units.Load(), 0)+lease.Granted, ls.now())
	// Ended meanwhile: the batch's units, or all the lease holds, go back.
	back, whole := ls.keep(key, e, lease.Granted)
	at := lease.At
	if whole {
		at = bt.since
	}
	if back > 0 {
		ls.giveBack(e.node, e.req, at, back)
	}
}

// keep adds the n units of a batch that landed to e, the lease of key, and
// returns the units that go back to Redis instead: the batch's, when e had
// ended; all e holds (whole), when e left the table while the batch was
// out; none otherwise.
func (ls *leases) keep(key string, e *leaseEntry, n int64) (back int64, whole bool) {
	if !e.add(n) {
		return n, false
	}
	if cur, _ := ls.entries.Load(key); cur != e {
		return e.end(), true
	}
	return 0, false
}

// unsure counts the units of a lease request for key (a first batch or a
// renewal of want units) that got no answer, a: when it may have run on
// Redis (a.unknown), they may be taken there and never spent, and are
// counted of unknown outcome; a request that ran nowhere took nothing.
func (ls *leases) unsure(key string, a answer, want int64) {
	if a.unknown {
		ls.unknown.Add(want)
		ls.log.Debug("hybrid: lease batch of unknown outcome", "key", key, "units", want, "reason", a.why.String(), "err", a.err)
	}
}

// expire ends e: its units are given back, in the background.
func (ls *leases) expire(key string, e *leaseEntry) {
	if ls.entries.CompareAndDelete(key, e) {
		ls.deleted(key)
	}
	if left := e.end(); left > 0 {
		at := e.batch.Load().since
		ls.goDo(true, func() { ls.giveBack(e.node, e.req, at, left) })
	}
}

// giveBack returns units to the node they were taken from, bounded by
// Timeout, if it is still in the ring: a removed node's client is closed
// (or about to be), and its keys are decided elsewhere now.
func (ls *leases) giveBack(nd *node, req remote.Request, at, units int64) {
	if ls.topo.byName(nd.name) != nd {
		ls.lost.Add(units)
		ls.log.Debug("hybrid: lease units dropped, their node left the ring", "node", nd.name, "key", req.Key(), "units", units)
		return
	}
	gr, err := req.GiveBack(units, at)
	if err != nil {
		return // units < 1: nothing to give
	}
	// Through the node's queue, in a decide call with its other
	// requests: one round trip each cost a give-back as much client and
	// Redis CPU as a decision made alone, and warm keys' leases end often.
	if a := nd.ask(context.Background(), gr, time.Now().Add(ls.timeout), nil); !a.ok {
		if a.unknown {
			// It may have run: the units may be back in Redis.
			ls.unknown.Add(units)
		} else {
			ls.lost.Add(units)
		}
		ls.log.Debug("hybrid: give-back failed", "node", nd.name, "key", req.Key(), "units", units, "lost", !a.unknown, "reason", a.why.String(), "err", a.err)
	}
}

// outstanding is the units held in leases now: how far the limits may be
// exceeded at this moment.
//
// A walk over the leases, not a running sum: a sum moved by every spend put
// a contended atomic on the hot path, and a hot key's decisions ran at half
// the rate (go run ./bench: 14.5 M against 7-8 M a second). Leases are
// held by the keys above WarmRate only, a few thousand at 500 K
// decisions a second, and the walk is Stats's, not a decision's.
func (ls *leases) outstanding() int64 {
	var n int64
	ls.entries.Range(func(_, v any) bool {
		n += max(v.(*leaseEntry).units.Load(), 0)
		return true
	})
	return n
}

// close starts no more renewals, lets those in flight land (each bounded
// by the Timeout), and gives every lease back, waiting for it all. Leases
// off (ls nil): nothing.
func (ls *leases) close() {
	if ls == nil {
		return
	}
	ls.cancel()
	ls.gate.Lock()
	ls.closed = true
	ls.gate.Unlock()
	ls.wg.Wait()
	ls.entries.Range(func(k, v any) bool {
		e := v.(*leaseEntry)
		ls.entries.Delete(k)
		if left := e.end(); left > 0 {
			ls.giveBack(e.node, e.req, e.batch.Load().since, left)
		}
		return true
	})
}

// peek answers a Peek from the key's lease when one with units left is
// held for the same limits: what its next spend would answer. Leases off
// (ls nil): ok false.
func (ls *leases) peek(key string, limits []Limit) (Result, bool) {
	if ls == nil {
		return Result{}, false
	}
	v, ok := ls.entries.Load(key)
	if !ok {
		return Result{}, false
	}
	e := v.(*leaseEntry)
	now := ls.now()
	left := e.units.Load()
	bt := e.batch.Load()
	if left < 1 || now >= bt.expires || !slices.Equal(e.req.Limits(), limits) {
		return Result{}, false
	}
	b := bt.binding
	return Result{Allowed: true, Limit: limits[b], Binding: b, Remaining: min(bt.remaining+left-1, limits[b].Capacity()),
		ResetAfter: time.Duration(max(bt.resetAt-now, 0)), Delay: e.delay(bt, left-1, 1, now), Source: SourceLease}, true
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
	if bt := e.batch.Load(); bt.at > 0 && bt.binding == binding {
		remaining = bt.remaining
	}
	return max(e.units.Load(), 0), remaining
}

// reset ends the key's lease when it holds any of limits. Its units vanish
// with the state of the limits reset (a give-back to them could remove
// what was charged after the reset: a SlidingWindowLog's newest events);
// those held for its other limits go back to them. Leases off (ls nil):
// nothing.
func (ls *leases) reset(key string, limits []Limit) {
	if ls == nil {
		return
	}
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
	if rn := e.renewal.Load(); rn != nil {
		t := time.NewTimer(2 * ls.timeout)
		select {
		case <-rn.done:
		case <-t.C:
		}
		t.Stop()
	}
	left := e.end()
	if left <= 0 || len(keep) == 0 {
		return
	}
	req, err := remote.NewLease(e.req.Key(), 1, keep...)
	if err != nil {
		return
	}
	at := e.batch.Load().since
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
