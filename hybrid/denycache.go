package hybrid

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// denyCache remembers denials Redis gave, so that a client over its limit
// is answered in process until its RetryAfter passes: no Redis call for an
// abusive client. It holds about max entries (one per key: the latest
// denial). Reads take no lock, so any number of goroutines hammering one
// denied key never wait for each other. A nil *denyCache is the cache
// turned off: it remembers and answers nothing.
type denyCache struct {
	base time.Time // monotonic origin of the entries' deadlines
	m    sync.Map  // key string -> *denial, never modified once stored
	n    atomic.Int64
	max  int64
	mu   sync.Mutex // serializes evictions
}

// denial is one remembered denial: requests for the same key, with the same
// limits and a cost from cost to most, are denied until until.
type denial struct {
	limits []Limit
	cost   int64
	most   int64         // the smallest capacity of limits: a cost above it is bad input
	until  time.Duration // since base
	res    Result        // as Redis answered, at time until-RetryAfter
}

func newDenyCache(maxKeys int) *denyCache {
	return &denyCache{base: time.Now(), max: int64(max(1, maxKeys))}
}

// find is the denial cache's stage of a request: the denial remembered
// for a request like it (the same key and limits, a cost no smaller), and
// the time it was looked up at, for its answer; nil when none answers. A
// denial is remembered only for a request Redis decided, so valid input:
// one like it is valid too, and the cache answers before validation, which
// took a quarter of a cached denial's time (BenchmarkDenyCache); a cost
// above a limit's capacity is left to validation. The cache off (c nil):
// nil.
func (c *denyCache) find(key string, n int64, limits []Limit) (*denial, time.Duration) {
	if c == nil || c.n.Load() == 0 {
		// Nothing denied lately: no lookup.
		return nil, 0
	}
	v, ok := c.m.Load(key)
	if !ok {
		return nil, 0
	}
	d := v.(*denial)
	now := time.Since(c.base)
	if now >= d.until || n < d.cost || n > d.most || !slices.Equal(d.limits, limits) {
		return nil, 0 // an expired denial stays until replaced or evicted
	}
	return d, now
}

// answer is the denial as Redis would give it at now (since the cache's
// base): its RetryAfter and ResetAfter counted down.
func (d *denial) answer(now time.Duration) Result {
	r := d.res
	elapsed := r.RetryAfter - (d.until - now)
	r.RetryAfter -= elapsed
	r.ResetAfter = max(r.ResetAfter-elapsed, r.RetryAfter)
	r.Source = SourceDenyCache
	return r
}

// put remembers r, a denial Redis gave for the request, for keep (at most
// its RetryAfter). The cache off (c nil): nothing.
func (c *denyCache) put(key string, n int64, limits []Limit, r Result, keep time.Duration) {
	if c == nil || r.Allowed || r.RetryAfter <= 0 || keep <= 0 {
		return
	}
	r.RetryAfter = min(r.RetryAfter, keep)
	now := time.Since(c.base)
	d := &denial{limits: slices.Clone(limits), cost: n, most: minCapacity(limits), until: now + r.RetryAfter, res: r}
	if _, loaded := c.m.Swap(key, d); !loaded && c.n.Add(1) > c.max {
		c.evict(now)
	}
}

// evict brings the cache back to its bound, looking at a few entries only:
// the expired among them go first, then others in the map's order.
func (c *denyCache) evict(now time.Duration) {
	if !c.mu.TryLock() {
		return // another goroutine is evicting
	}
	defer c.mu.Unlock()
	seen := 0
	c.m.Range(func(k, v any) bool {
		if (v.(*denial).until <= now || c.n.Load() > c.max) && c.m.CompareAndDelete(k, v) {
			c.n.Add(-1)
		}
		seen++
		return seen < 64
	})
}

// len returns the number of entries held.
func (c *denyCache) len() int {
	if c == nil {
		return 0
	}
	return int(c.n.Load())
}

// drop forgets the denial remembered for key, if any.
func (c *denyCache) drop(key string) {
	if c == nil {
		return
	}
	if _, ok := c.m.LoadAndDelete(key); ok {
		c.n.Add(-1)
	}
}
