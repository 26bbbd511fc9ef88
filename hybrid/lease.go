package hybrid

import (
	"context"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hybridlimit/hybridlimit/remote"
)

// leaseReply is a lease as a round trip answers it: remote.Result with
// Granted and At set.
type leaseReply = remote.Result

// Leases serve hot keys in process. When this instance sees a (key, limits)
// more often than Lease.HotRate per second, it takes a batch of units from
// Redis in one atomic script (remote.Store.Lease: the units leave the shared
// budget at once) and spends them locally, lock-free. Before the batch runs
// out a background renewal takes the next one, sized to the instance's own
// recent demand (about Lease.RenewEvery of it) and capped at
// Lease.MaxFraction of the smallest capacity. A lease expires after
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
// the limit that bound the short batch, or Redis's RetryAfter if longer. So a client hammering a key far
// over a fast limit costs a few Redis calls per poll across all instances,
// and every unit the limit refills is taken and spent.
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
// over the last two hotWindows.
//
// A key at DefaultWarmRate makes 2.5 requests a window. With one row of
// 65,536 slots and the busier of the two windows as the rate, 160,000 cold
// requests a second over 100,000 keys (0.24 per slot and window, and a
// cold key's own requests come in pairs now and then) made 3.1% of them
// look warm in steady traffic (TestColdKeysDoNotLookWarm), and each was
// leased: a lease and a give-back for a request or two (the uniform
// workload ran 5% slower than with no warm leasing). Two rows, counted
// over two windows (a warm key makes 5 requests there, a cold slot about
// 1), take that to 0.13%. The background grows with the traffic an
// instance sees: at 500,000 cold requests a second 2.5% of those over 10 M
// keys look warm (8.9% with one row). (With 4,096 slots, every cold key
// looked warm.)
const hotSlots = 1 << 16

// hotRow is the number of slots in each row of the sketch.
const hotRow = hotSlots / 2

// hotWindow is the window over which a slot's rate is measured.
const hotWindow = 100 * time.Millisecond

type leases struct {
	l       *Limiter
	seed    maphash.Seed
	base    time.Time
	slots   [hotSlots]hotSlot
	entries sync.Map // key string -> *leaseEntry
	count   atomic.Int64
	lost    atomic.Int64 // units neither spent nor given back
	wg      sync.WaitGroup
	ctx     context.Context // cancelled by Close: renewals end
	cancel  context.CancelFunc

	gate   sync.RWMutex // go() holds it shared, close exclusively
	closed bool         // guarded by gate: no goroutine starts after close
}

// goDo runs f in a goroutine that close waits for, unless close has begun;
// then it runs f in the caller's goroutine when sync is set, or not at all.
func (ls *leases) goDo(sync bool, f func()) {
	ls.gate.RLock()
	if ls.closed {
		ls.gate.RUnlock()
		if sync {
			f()
		}
		return
	}
	ls.wg.Add(1)
	ls.gate.RUnlock()
	go func() {
		defer ls.wg.Done()
		f()
	}()
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
type leaseEntry struct {
	req      remote.Request // the key and limits, kept (Request.Keep)
	node     *node
	units    atomic.Int64 // units left to spend
	expires  atomic.Int64 // ns since base
	at       atomic.Int64 // Redis time of the newest batch, µs
	size     atomic.Int64 // units asked for at the last renewal
	renewing atomic.Bool
	binding  atomic.Int64 // index of the binding limit at the last batch
	windowed bool         // a FixedWindow limit: the lease ends with the window
	given    atomic.Int64 // units left just after the last batch arrived
	took     atomic.Int64 // ns since base when it arrived

	// short is set while Redis gives less than asked (the key is over its
	// limit): a dry lease then denies in process, and no batch is asked
	// for before waitUntil (ns since base), when a batch has refilled.
	short     atomic.Bool
	waitUntil atomic.Int64
	resetAt   atomic.Int64 // ns since base when the binding limit is full again
	remaining atomic.Int64 // the binding limit's remaining, as the last batch's answer said
	polls     []int64      // per limit, ns for a batch of ceiling units to refill at its rate

	// LeakyBucket: the time (ns since base) the work ahead of the batch's
	// first place has drained, and the drain interval of one place (the
	// longest of the request's LeakyBucket limits). 0 tick: no LeakyBucket.
	slot0   atomic.Int64
	slotEnd atomic.Int64 // the time (ns since base) the batch's last place has drained
	tick    int64

	// Written only by requests for the key with other limits (see idle).
	probeUnits atomic.Int64
	probeAt    atomic.Int64 // ns since base, +1 (0: never probed)
}

func newLeases(l *Limiter) *leases {
	ctx, cancel := context.WithCancel(context.Background())
	ls := &leases{l: l, seed: maphash.MakeSeed(), base: time.Now(), ctx: ctx, cancel: cancel}
	ls.goDo(false, ls.sweep)
	return ls
}

// sweepEvery is how often, in TTLs, the lease table is swept for leases
// past their TTL that no request came to end.
const sweepEvery = 2

// sweep ends, every TTL/sweepEvery, the leases past their TTL: a key
// nobody asks for any more gives its units back.
func (ls *leases) sweep() {
	t := time.NewTicker(ls.l.cfg.Lease.TTL / sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ls.ctx.Done():
			return
		case <-t.C:
		}
		now := ls.now()
		ls.entries.Range(func(k, v any) bool {
			if e := v.(*leaseEntry); now >= e.expires.Load() {
				ls.expire(k.(string), e)
			}
			return true
		})
	}
}

// rehome ends the leases whose key the ring now routes to another node
// (after AddNode or RemoveNode): their units came from a node that no
// longer decides the key.
func (ls *leases) rehome() {
	ls.entries.Range(func(k, v any) bool {
		if e := v.(*leaseEntry); ls.l.locate(k.(string)) != e.node {
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
	return float64(now+1-at) >= float64(time.Second)/ls.l.cfg.Lease.HotRate
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

// arrived records a batch of granted units of want asked for, as Redis
// answered it at now: its binding limit, Redis time and durations. A batch
// short of want makes the lease wait for the refill.
func (ls *leases) arrived(e *leaseEntry, lease remote.Result, want int64, now int64) {
	e.at.Store(lease.At)
	e.binding.Store(int64(lease.Binding))
	e.expires.Store(now + int64(ls.ttl(lease.ResetAfter, e.req.Limits())))
	e.resetAt.Store(now + int64(lease.ResetAfter))
	e.remaining.Store(lease.Remaining)
	if e.tick > 0 {
		// A batch's places follow the previous batch's in Redis's queue.
		// Each slot0 errs late by its reply's travel; a batch answered
		// later than the next would let the next one's places in among
		// its own, and the output would outrun the rate by the
		// difference (TestLeaseLeakyBucketKeepsShaping saw 0.6 ms).
		slot0 := max(now+int64(lease.Delay), e.slotEnd.Load())
		e.slot0.Store(slot0)
		e.slotEnd.Store(slot0 + lease.Granted*e.tick)
	} else {
		e.slot0.Store(now + int64(lease.Delay))
	}
	e.took.Store(now)
	if lease.Granted < want {
		e.short.Store(true)
		// The limit that bound the batch refills it; a slower one that did
		// not bind (8/min beside 5/s) would hold the key back for its own
		// refill, seconds, while the binding one refills in a fraction.
		poll := e.polls[min(max(lease.Binding, 0), len(e.polls)-1)]
		e.waitUntil.Store(now + max(poll, int64(lease.RetryAfter)))
	} else {
		e.short.Store(false)
	}
}

// dry answers a request that a waiting lease cannot serve: denied, until
// the next batch can have arrived (the wait for the refill, then a round
// trip).
func (ls *leases) dry(e *leaseEntry, limits []Limit, now int64) Result {
	retry := time.Duration(max(e.waitUntil.Load()-now, 0) + e.node.rtt.Load())
	retry = max(retry, time.Microsecond)
	reset := max(time.Duration(e.resetAt.Load()-now), retry)
	b := int(e.binding.Load())
	return Result{Limit: limits[b], Binding: b, RetryAfter: retry, ResetAfter: reset, Source: SourceDenyCache}
}

// delay is how long to hold a request of n places spent from the
// LeakyBucket lease e at now, left places remaining after it: until the
// work ahead of its first place, the k-th of the batch, has drained.
func (e *leaseEntry) delay(left, n, now int64) time.Duration {
	if e.tick == 0 {
		return 0 // not a LeakyBucket: nothing more to read
	}
	k := e.given.Load() - left - n
	return time.Duration(max(e.slot0.Load()+k*e.tick-now, 0))
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

// spend answers a request from the lease of key, of hash h, if it has one
// with units left. held reports a live lease for the key (ran dry, a
// renewal on its way): the request then goes to Redis as usual rather than
// taking another. It never blocks and does not allocate.
func (ls *leases) spend(key string, h uint64, n int64, limits []Limit) (r Result, served, held bool) {
	if ls.slots[h%hotRow].present.Load() == 0 {
		// No lease in the key's slot (most cold keys): no lookup. A lease
		// stored just now may be missed; its key then goes to Redis once.
		return Result{}, false, false
	}
	v, ok := ls.entries.Load(key)
	if !ok {
		return Result{}, false, false
	}
	e := v.(*leaseEntry)
	now := ls.now()
	if !slices.Equal(e.req.Limits(), limits) {
		// The key is leased under other limits (a rule changed, or the
		// key is asked under two sets). A lease past its TTL or no longer
		// spent is given back, and this request may lease its own.
		if now >= e.expires.Load() || ls.idle(e, now) {
			ls.expire(key, e)
			return Result{}, false, false
		}
		return Result{}, false, true
	}
	if now >= e.expires.Load() {
		ls.expire(key, e)
		return Result{}, false, false
	}
	if n > e.size.Load() {
		// More than a batch: Redis decides it, and it starts no renewal
		// (it may be bad input, which must take nothing).
		return Result{}, false, true
	}
	left := e.units.Add(-n)
	if left < 0 {
		e.units.Add(n)
		if e.short.Load() {
			// Over the limit: Redis has nothing until the refill. Once it
			// is due, one request asks for the next batch and is decided
			// by Redis itself, so that a request made at a dry answer's
			// RetryAfter finds the refill; the others wait for the batch.
			if now >= e.waitUntil.Load() && ls.renew(key, e) {
				return Result{}, false, true
			}
			return ls.dry(e, limits, now), true, true
		}
		ls.renew(key, e)
		return Result{}, false, true
	}
	if e.tick == 0 && left < e.size.Load()/2 && (!e.short.Load() || now >= e.waitUntil.Load()) {
		ls.renew(key, e)
	}
	// What Redis would answer: the binding limit's remaining as it last
	// said, with the units this instance holds and has not spent (never
	// the lease's units alone), and its time until full from then.
	b := int(e.binding.Load())
	return Result{Allowed: true, Granted: n, Limit: limits[b], Binding: b, Remaining: min(e.remaining.Load()+left, limits[b].Capacity()),
		ResetAfter: time.Duration(max(e.resetAt.Load()-now, 0)), Delay: e.delay(left, n, now), Source: SourceLease}, true, true
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
	cover := max(ls.l.cfg.Lease.RenewEvery, 2*time.Duration(nd.rtt.Load()))
	want := int64(rate * cover.Seconds())
	want = max(want, min(minLeaseBatch, int64(rate*ls.l.cfg.Lease.TTL.Seconds()/2)))
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
	lc := &ls.l.cfg.Lease
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
	return int64(float64(c) * ls.l.cfg.Lease.MaxFraction)
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
// (they are given back) the request is decided as usual.
func (ls *leases) take(ctx context.Context, deadline time.Time, nd *node, req remote.Request, rate float64) (Result, takeStatus, Reason, error) {
	n, limits := req.N(), req.Limits()
	want := ls.size(nd, rate, n, limits)
	if want < n || n < 1 {
		return Result{}, takeSkipped, 0, nil
	}
	// The lease is in the table before its first batch is asked for, dry
	// and renewing: the callers that find the hot key meanwhile go to Redis
	// as for a renewal in flight, instead of each taking a batch (64
	// callers did, and gave back what they could not keep, after the
	// lease that Redis had nothing left for had begun to wait for the next
	// window: nine units in ten of every window sat in Redis unused).
	// Copies: the caller's key and limits must not escape.
	e := newEntry(nd, req, ls.fraction(minCapacity(limits)))
	e.renewing.Store(true)
	e.size.Store(want)
	e.expires.Store(ls.now() + int64(ls.l.cfg.Lease.TTL))
	k := e.req.Key()
	if _, loaded := ls.entries.LoadOrStore(k, e); loaded {
		return Result{}, takeSkipped, 0, nil
	}
	ls.stored(k)
	lr, _ := req.Lease(want) // want >= n >= 1
	lease, ok, why, err := ls.l.ask(ctx, nd, lr, deadline)
	if !ok || lease.Granted > 0 && lease.Granted < n {
		if ls.entries.CompareAndDelete(k, e) {
			ls.deleted(k)
		}
		if !ok {
			return Result{}, takeFailed, why, err
		}
		at, units := lease.At, lease.Granted
		ls.goDo(true, func() { ls.giveBack(nd, e.req, at, units) })
		return Result{}, takeSkipped, 0, nil
	}
	// A lease, or, when Redis has nothing to give, one that waits for the
	// refill: the requests that follow are denied in process.
	granted := max(lease.Granted-n, 0)
	e.given.Store(granted)
	ls.arrived(e, lease, want, ls.now())
	if e.tick > 0 {
		// The taker holds the batch's first n places: the units left are
		// places n and on.
		e.slot0.Add(n * e.tick)
	}
	e.units.Store(granted)
	e.renewing.Store(false)
	// Ended meanwhile (rehome expires leases while they are being taken):
	// the units go back, as a renewal's do, rather than sit in a lease
	// nobody can find.
	if cur, _ := ls.entries.Load(k); cur != e {
		if left := e.units.Swap(0); left > 0 {
			at := lease.At
			ls.goDo(true, func() { ls.giveBack(nd, e.req, at, left) })
		}
	}
	if lease.Granted == 0 {
		// Redis has nothing to give: that is a denial.
		return result(lease.Decision, limits, lease.Binding, SourceRemote), taken, 0, nil
	}
	return Result{Allowed: true, Granted: n, Limit: limits[lease.Binding], Binding: lease.Binding, Remaining: lease.Remaining + granted,
		ResetAfter: lease.ResetAfter, Delay: lease.Delay, Source: SourceLease}, taken, 0, nil
}

// ttl is Lease.TTL, shortened to the end of the window for FixedWindow,
// whose units count only in the window they were taken in.
func (ls *leases) ttl(resetAfter time.Duration, limits []Limit) time.Duration {
	ttl := ls.l.cfg.Lease.TTL
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
	if ls.ctx.Err() != nil || !e.renewing.CompareAndSwap(false, true) {
		return false
	}
	ls.goDo(false, func() {
		defer e.renewing.Store(false)
		if ls.l.locate(key) != e.node {
			// The key moved to another node: its units count there no
			// more, and a renewal would go to the wrong node.
			ls.expire(key, e)
			return
		}
		now := ls.now()
		left := e.units.Load()
		short := e.short.Load()
		if short && now < e.waitUntil.Load() {
			return // the refill is not there yet
		}
		// The demand since the last batch: what it has spent, per second.
		spent := e.given.Load() - left
		rate := float64(max(spent, 1)) / max(time.Duration(now-e.took.Load()), time.Millisecond).Seconds()
		// What is held, plus the batch, stays within MaxFraction; over the
		// limit, the demand is more than any batch.
		want := ls.ceiling(e.req.Limits()) - max(left, 0)
		if !short {
			want = min(ls.size(e.node, rate, 1, e.req.Limits()), want)
		}
		if e.windowed && !short {
			// Units of a window are lost when it ends: take no more than
			// the demand can spend before then (over the limit, it spends
			// whatever comes).
			rest := time.Duration(e.expires.Load() - now)
			want = min(want, int64(rate*rest.Seconds())-max(left, 0))
		}
		if want < 1 {
			return
		}
		req, _ := e.req.Lease(want) // want >= 1
		lease, ok, _, _ := ls.l.ask(ls.ctx, e.node, req, ls.l.deadline(ls.ctx, time.Now()))
		if !ok {
			return
		}
		// Nothing, or less than asked: the key is over its limit, and the
		// lease waits for the refill (arrived) rather than ending.
		e.size.Store(want)
		// Redis's remaining first: a spend between the two stores then
		// counts the batch once too few, never twice (above capacity).
		e.remaining.Store(lease.Remaining)
		if e.tick > 0 {
			// Places: where the batch's places fall (slot0, given) is set
			// before they can be spent. A spend between the units and
			// slot0 numbered the new batch's places from the last batch's
			// slot0, and released two places at each drain time.
			e.given.Store(max(e.units.Load(), 0) + lease.Granted)
			ls.arrived(e, lease, want, ls.now())
			e.units.Add(lease.Granted)
		} else {
			e.given.Store(e.units.Add(lease.Granted))
			ls.arrived(e, lease, want, ls.now())
		}
		// Expired meanwhile: whatever expire did not take back goes back now.
		if cur, _ := ls.entries.Load(key); cur != e {
			if left := e.units.Swap(0); left > 0 {
				ls.giveBack(e.node, e.req, e.at.Load(), left)
			}
		}
	})
	if ls.ctx.Err() != nil {
		e.renewing.Store(false) // close has begun: no renewal was started
		return false
	}
	return true
}

// expire ends e: its units are given back, in the background.
func (ls *leases) expire(key string, e *leaseEntry) {
	if ls.entries.CompareAndDelete(key, e) {
		ls.deleted(key)
	}
	if left := e.units.Swap(0); left > 0 {
		ls.goDo(true, func() { ls.giveBack(e.node, e.req, e.at.Load(), left) })
	}
}

// giveBack returns units to the node they were taken from, bounded by
// Timeout, if it is still in the ring: a removed node's client is closed
// (or about to be), and its keys are decided elsewhere now.
func (ls *leases) giveBack(nd *node, req remote.Request, at, units int64) {
	if ls.l.nodeByName(nd.name) != nd {
		ls.lost.Add(units)
		ls.l.cfg.Logger.Debug("hybrid: lease units dropped, their node left the ring", "node", nd.name, "units", units)
		return
	}
	gr, err := req.GiveBack(units, at)
	if err != nil {
		return // units < 1: nothing to give
	}
	// Through the node's batcher, in a decide call with its other
	// requests: one round trip each cost a give-back as much client and
	// Redis CPU as a decision made alone, and warm keys' leases end often.
	_, ok, why, err := ls.l.ask(context.Background(), nd, gr, time.Now().Add(ls.l.cfg.Timeout))
	if !ok {
		ls.lost.Add(units)
		ls.l.cfg.Logger.Debug("hybrid: give-back failed", "node", nd.name, "units", units, "reason", why.String(), "err", err)
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

// close stops renewals, gives every lease back and waits for it all.
func (ls *leases) close() {
	ls.cancel()
	ls.gate.Lock()
	ls.closed = true
	ls.gate.Unlock()
	ls.wg.Wait()
	ls.entries.Range(func(k, v any) bool {
		e := v.(*leaseEntry)
		ls.entries.Delete(k)
		if left := e.units.Swap(0); left > 0 {
			ls.giveBack(e.node, e.req, e.at.Load(), left)
		}
		return true
	})
}
