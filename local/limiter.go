package local

import (
	"errors"
	"fmt"
	"hash/maphash"
	"time"

	"github.com/hybridlimit/hybridlimit/internal/algo"
	"github.com/hybridlimit/hybridlimit/internal/limitspec"
	"github.com/hybridlimit/hybridlimit/limit"
)

// maxLimits is how many distinct limits of one request are handled without
// allocating; more are allowed, at the cost of an allocation.
const maxLimits = 16

// Limiter decides requests for many keys against limits, in process. Each
// (key, limit) pair has its own state, created on first use and dropped
// when it no longer matters or when memory is full (see Config.MaxKeys).
//
// A Limiter is safe for concurrent use by multiple goroutines. It starts no
// goroutines and holds no resources, so it needs no Close.
type Limiter struct {
	cfg    Config
	now    func() time.Time // Config.Now, or nil for the default clock
	base   time.Time        // the default clock: wall time at New, advanced by
	baseUS int64            // the monotonic clock (base in µs since the epoch)
	seed   maphash.Seed
	mask   uint64
	shards []shard
}

// New returns a Limiter configured by cfg, whose zero fields take their
// documented defaults. It returns an error when a field is out of range.
func New(cfg Config) (*Limiter, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	l := &Limiter{
		cfg:    cfg,
		now:    cfg.Now,
		base:   time.Now(),
		seed:   maphash.MakeSeed(),
		mask:   uint64(cfg.Shards - 1),
		shards: make([]shard, cfg.Shards),
	}
	l.baseUS = l.base.UnixMicro()
	if l.cfg.Now == nil {
		l.cfg.Now = func() time.Time { return time.UnixMicro(l.clock()) }
	}
	// Spread MaxKeys exactly: the first MaxKeys%Shards shards take one more.
	per, extra := cfg.MaxKeys/cfg.Shards, cfg.MaxKeys%cfg.Shards
	for i := range l.shards {
		sh := &l.shards[i]
		sh.cap = per
		if i < extra {
			sh.cap++
		}
	}
	return l, nil
}

// Config returns the configuration in use, defaults filled in and Shards
// adjusted as Config documents.
func (l *Limiter) Config() Config { return l.cfg }

// Allow is AllowN with a cost of 1.
func (l *Limiter) Allow(key string, limits ...limit.Limit) (d limit.Decision, err error) {
	nowUS := l.clock()
	if len(limits) == 1 && key != "" {
		h := l.hash(key)
		err = l.allowOne(&d, l.shardOf(h), h, key, nowUS, 1, &limits[0])
		return d, err
	}
	d, _, err = l.allowAt(key, nowUS, 1, limits)
	return d, err
}

// AllowN decides a request of cost units for key against limits, now, and
// charges them when it is admitted. With several limits the request is
// admitted only when every limit admits it, and then charged to all of them;
// a denied request consumes nothing. The Decision is that of the binding
// limit: when denied, the denying limit with the longest RetryAfter; when
// admitted, the one with the fewest Remaining (Delay is the longest of all).
// Limits equal in their canonical form (limit.Limit.Canonical: PerSecond(10)
// and a Burst of 10 are one limit) share the key's state across calls.
//
// Denial is not an error. The error is non-nil only for bad input, which
// consumes nothing: ErrInvalidKey for an empty key; an error wrapping
// limit.ErrInvalidLimit for an invalid limit, none at all, or one given twice
// (as limit.CheckDistinct says); limit.ErrInvalidCost for a cost below 1;
// limit.ErrCostExceedsLimit for a cost above a limit's capacity;
// ErrTooManyLimits for more limits than MaxKeys allows one key.
func (l *Limiter) AllowN(key string, cost int64, limits ...limit.Limit) (d limit.Decision, err error) {
	nowUS := l.clock()
	if len(limits) == 1 && key != "" {
		h := l.hash(key)
		err = l.allowOne(&d, l.shardOf(h), h, key, nowUS, cost, &limits[0])
		return d, err
	}
	d, _, err = l.allowAt(key, nowUS, cost, limits)
	return d, err
}

// AllowAt is AllowN at the instant now instead of Config.Now's, and also
// returns the index in limits of the binding limit. Time that goes backwards
// counts as package limit says.
func (l *Limiter) AllowAt(key string, now time.Time, cost int64, limits ...limit.Limit) (limit.Decision, int, error) {
	return l.allowAt(key, now.UnixMicro(), cost, limits)
}

// allowAt is AllowAt at nowUS. Bad input is reported in the order of
// limit.TakeAll: the key, no limits, a limit given twice, then each limit's
// validity and the cost against it.
func (l *Limiter) allowAt(key string, nowUS, cost int64, limits []limit.Limit) (d limit.Decision, b int, err error) {
	if err := checkRequest(key, limits); err != nil {
		return limit.Decision{}, 0, err
	}
	h := l.hash(key)
	sh := l.shardOf(h)
	if len(limits) == 1 {
		err = l.allowOne(&d, sh, h, key, nowUS, cost, &limits[0])
		return d, 0, err
	}
	var buf groupBuf
	g := buf.group(len(limits))
	sh.mu.Lock()
	if bad, err := sh.gather(&g, h, key, limits, cost, true, nowUS); bad >= 0 {
		sh.mu.Unlock()
		return limit.Decision{}, 0, l.badRequest(sh, limits, bad, cost, err)
	}
	b = algo.TakeSpecsTo(limitspec.Decision(&d), g.states, g.specs, nowUS, cost)
	sh.settle(&g, d.Allowed, nowUS)
	sh.mu.Unlock()
	return d, b, nil
}

// allowOne decides a request with a valid key against a single limit, the
// common case, into *d; the limit is the binding one. *d is written in place
// rather than returned (see algo.Spec.TakeTo).
func (l *Limiter) allowOne(d *limit.Decision, sh *shard, h uint64, key string, nowUS, cost int64, lim *limit.Limit) error {
	sh.mu.Lock()
	e := sh.lookup(h, key, lim)
	if e == nil || e.changed(lim) {
		sp, err := limitspec.Of(*lim)
		if err != nil || cost < 1 || cost > sp.C {
			sh.mu.Unlock()
			return l.badRequest(sh, []limit.Limit{*lim}, 0, cost, err)
		}
		if e == nil {
			e = sh.insert(nil, h, key, lim, sp, nowUS)
		} else {
			e.convert(sp, nowUS)
		}
	} else if cost < 1 || cost > e.spec.C {
		sh.mu.Unlock()
		return l.badRequest(sh, []limit.Limit{*lim}, 0, cost, nil)
	}
	e.spec.TakeTo(limitspec.Decision(d), &e.state, nowUS, cost)
	e.used = nowUS
	sh.last, sh.lastHash = e, h
	sh.mu.Unlock()
	return nil
}

// Lease takes up to want units for key from all the limits at once, now: as
// many as every limit admits, at most want. It returns the units granted and
// charged (0 when any limit is exhausted; nothing is charged then) and the
// binding Decision after the charge. The units are spent by the caller, and
// those unused may be returned with GiveBack. Bad input is reported as by
// AllowN, want playing the part of the cost, except that it may exceed a
// capacity.
func (l *Limiter) Lease(key string, want int64, limits ...limit.Limit) (granted int64, d limit.Decision, err error) {
	granted, d, _, err = l.LeaseAt(key, time.UnixMicro(l.clock()), want, limits...)
	return granted, d, err
}

// LeaseAt is Lease at the instant now instead of Config.Now's, and also
// returns the index in limits of the binding limit. Pass the same instant
// to GiveBack as leaseAt.
func (l *Limiter) LeaseAt(key string, now time.Time, want int64, limits ...limit.Limit) (granted int64, d limit.Decision, b int, err error) {
	if err := checkRequest(key, limits); err != nil {
		return 0, limit.Decision{}, 0, err
	}
	nowUS := now.UnixMicro()
	h := l.hash(key)
	sh := l.shardOf(h)
	var buf groupBuf
	g := buf.group(len(limits))
	sh.mu.Lock()
	if bad, err := sh.gather(&g, h, key, limits, want, false, nowUS); bad >= 0 {
		sh.mu.Unlock()
		return 0, limit.Decision{}, 0, l.badRequest(sh, limits, bad, want, err)
	}
	var ad algo.Decision
	granted, ad, b = algo.LeaseSpecs(g.states, g.specs, nowUS, want)
	d = limit.Decision(ad)
	sh.settle(&g, granted > 0, nowUS)
	sh.mu.Unlock()
	return granted, d, b, nil
}

// Peek returns what AllowN of one unit for key would decide now, and the
// binding limit's index, charging nothing. Bad input is reported as by
// AllowN.
func (l *Limiter) Peek(key string, limits ...limit.Limit) (limit.Decision, int, error) {
	if err := checkRequest(key, limits); err != nil {
		return limit.Decision{}, 0, err
	}
	nowUS := l.clock()
	h := l.hash(key)
	sh := l.shardOf(h)
	var buf groupBuf
	g := buf.group(len(limits))
	sh.mu.Lock()
	if bad, err := sh.gather(&g, h, key, limits, 1, true, nowUS); bad >= 0 {
		sh.mu.Unlock()
		return limit.Decision{}, 0, l.badRequest(sh, limits, bad, 1, err)
	}
	var d limit.Decision
	b := algo.PeekSpecs(limitspec.Decision(&d), g.states, g.specs, nowUS, 1)
	sh.settle(&g, false, nowUS) // entries it inserted go again
	sh.mu.Unlock()
	return d, b, nil
}

// Refund gives units back to key's limits now, never above their
// capacity, whenever they were taken: buckets get them back; a window from
// its current count (a SlidingWindowCounter from the previous window's
// once the current one's is spent); the sliding log loses its newest
// events. Limits whose state is not kept are skipped; bad input is
// ignored, as by GiveBack.
func (l *Limiter) Refund(key string, units int64, limits ...limit.Limit) {
	if key == "" || units < 1 || limit.CheckDistinct(limits) != nil {
		return
	}
	nowUS := l.clock()
	h := l.hash(key)
	sh := l.shardOf(h)
	sh.mu.Lock()
	for i := range limits {
		if e := sh.lookup(h, key, &limits[i]); e != nil && !e.changed(&limits[i]) {
			st := [1]*algo.State{&e.state}
			algo.RefundSpecs(st[:], []algo.Spec{e.spec}, nowUS, units)
			e.used = nowUS
		}
	}
	sh.mu.Unlock()
}

// Reset forgets key's state for limits (a named limit's whatever its rate):
// the next request starts afresh.
func (l *Limiter) Reset(key string, limits ...limit.Limit) {
	h := l.hash(key)
	sh := l.shardOf(h)
	sh.mu.Lock()
	for i := range limits {
		if e := find(sh.m.get(h), key, &limits[i]); e != nil {
			sh.drop(sh.m.get(h), e)
		}
	}
	sh.mu.Unlock()
}

// GiveBack returns units of a lease taken at leaseAt for key from the same
// limits, never above their capacity: buckets get the units back; a window
// only while the lease's window is still counted; the sliding log drops that
// many of the oldest events charged at or after leaseAt. Limits whose state
// is no longer kept (expired or evicted) are skipped; bad input (an empty
// key, units below 1, a limit given twice, an invalid limit) is ignored.
func (l *Limiter) GiveBack(key string, leaseAt time.Time, units int64, limits ...limit.Limit) {
	if key == "" || units < 1 || limit.CheckDistinct(limits) != nil {
		return
	}
	nowUS, leaseUS := l.clock(), leaseAt.UnixMicro()
	h := l.hash(key)
	sh := l.shardOf(h)
	sh.mu.Lock()
	for i := range limits {
		if e := sh.lookup(h, key, &limits[i]); e != nil && !e.changed(&limits[i]) {
			st := [1]*algo.State{&e.state}
			algo.GiveBackSpecs(st[:], []algo.Spec{e.spec}, nowUS, leaseUS, units)
			e.used = nowUS
		}
	}
	sh.mu.Unlock()
}

// Len returns the number of entries kept, one per (key, limit) pair,
// expired ones included until they are dropped.
func (l *Limiter) Len() int {
	n := 0
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		n += sh.n
		sh.mu.Unlock()
	}
	return n
}

// Sweep drops every expired entry, one shard at a time, and releases the
// memory a shard kept from a past peak. Expired entries are also dropped a
// few at a time as keys are inserted, so calling Sweep is optional: it
// shortens the time memory stays in use after a burst of keys.
func (l *Limiter) Sweep() {
	nowUS := l.clock()
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		sh.sweep(nowUS)
		sh.mu.Unlock()
	}
}

// hash returns key's hash, seeded per Limiter: its low bits choose the
// shard, its high bits the key's first slot in the shard's index (home).
func (l *Limiter) hash(key string) uint64 { return maphash.String(l.seed, key) }

// shardOf returns the shard of a key of hash h.
func (l *Limiter) shardOf(h uint64) *shard { return &l.shards[h&l.mask] }

// checkRequest checks the key, that there is at least one limit, and that
// no limit is given twice.
func checkRequest(key string, limits []limit.Limit) error {
	if key == "" {
		return ErrInvalidKey
	}
	if len(limits) == 0 {
		return fmt.Errorf("local: %w: no limits given", limit.ErrInvalidLimit)
	}
	if err := limit.CheckDistinct(limits); err != nil {
		return fmt.Errorf("local: %w", err)
	}
	return nil
}

// badRequest builds the error for a request refused under the lock: the
// limit at index bad is invalid (err from limit.Limit.Validate) or cost is
// out of its range (err nil); or, when err is ErrTooManyLimits, the request
// has bad limits, more than the shard holds.
func (l *Limiter) badRequest(sh *shard, limits []limit.Limit, bad int, cost int64, err error) error {
	switch {
	case errors.Is(err, ErrTooManyLimits):
		return fmt.Errorf("%w: %d limits, %d entries in the shard (Config.MaxKeys %d)", err, bad, sh.cap, l.cfg.MaxKeys)
	case err != nil:
		return fmt.Errorf("local: limits[%d]: %w", bad, err)
	}
	return fmt.Errorf("local: limits[%d]: %w", bad, limits[bad].CheckCost(cost))
}

// clock returns now in microseconds since the Unix epoch: from Config.Now
// when given, otherwise the wall clock read by New advanced by the monotonic
// clock, which costs about half of time.Now and does not jump when the wall
// clock is stepped.
func (l *Limiter) clock() int64 {
	if l.now != nil {
		return l.now().UnixMicro()
	}
	return l.baseUS + int64(time.Since(l.base)/time.Microsecond)
}
