package hybrid

import (
	"hash/maphash"
	"slices"
	"sync"
	"time"
)

// denyCache remembers denials Redis gave, so that a client over its limit
// is answered in process until its RetryAfter passes: no Redis call for an
// abusive client. It holds at most max entries (one per key: the latest
// denial), spread over independently locked shards.
type denyCache struct {
	seed   maphash.Seed
	base   time.Time // monotonic origin of the entries' deadlines
	shards [denyShards]denyShard
	per    int // entries per shard
}

const denyShards = 64

type denyShard struct {
	mu sync.Mutex
	m  map[string]*denial
	_  [40]byte // keep shards on separate cache lines
}

// denial is one remembered denial: requests for the same key, with the same
// limits and at least the same cost, are denied until until.
type denial struct {
	limits []Limit
	cost   int64
	until  time.Duration // since base
	res    Result        // as Redis answered, at time until-RetryAfter
}

func newDenyCache(maxKeys int) *denyCache {
	c := &denyCache{seed: maphash.MakeSeed(), base: time.Now(), per: max(1, maxKeys/denyShards)}
	for i := range c.shards {
		c.shards[i].m = make(map[string]*denial)
	}
	return c
}

func (c *denyCache) shard(key string) *denyShard {
	return &c.shards[maphash.String(c.seed, key)%denyShards]
}

// get returns the remembered denial for the request, with its RetryAfter
// and ResetAfter counted down, or ok false.
func (c *denyCache) get(key string, n int64, limits []Limit) (Result, bool) {
	sh := c.shard(key)
	now := time.Since(c.base)
	sh.mu.Lock()
	d := sh.m[key]
	if d == nil || n < d.cost || !slices.Equal(d.limits, limits) {
		sh.mu.Unlock()
		return Result{}, false
	}
	if now >= d.until {
		delete(sh.m, key)
		sh.mu.Unlock()
		return Result{}, false
	}
	r := d.res
	sh.mu.Unlock()
	elapsed := r.RetryAfter - (d.until - now)
	r.RetryAfter -= elapsed
	r.ResetAfter = max(r.ResetAfter-elapsed, r.RetryAfter)
	r.Source = SourceDenyCache
	return r, true
}

// put remembers a denial Redis gave for the request.
func (c *denyCache) put(key string, n int64, limits []Limit, r Result) {
	if r.Allowed || r.RetryAfter <= 0 {
		return
	}
	sh := c.shard(key)
	d := &denial{
		limits: slices.Clone(limits),
		cost:   n,
		until:  time.Since(c.base) + r.RetryAfter,
		res:    r,
	}
	now := d.until - r.RetryAfter
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if _, ok := sh.m[key]; !ok && len(sh.m) >= c.per {
		// Full: drop the expired among a few entries (map order is
		// random); if none was, the one of them that expires first.
		var soonest string
		i := 0
		for k, e := range sh.m {
			if e.until <= now {
				delete(sh.m, k)
			} else if soonest == "" || e.until < sh.m[soonest].until {
				soonest = k
			}
			if i++; i == 8 {
				break
			}
		}
		if len(sh.m) >= c.per && soonest != "" {
			delete(sh.m, soonest)
		}
	}
	sh.m[key] = d
}

// len returns the number of entries held.
func (c *denyCache) len() int {
	n := 0
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		sh.mu.Unlock()
	}
	return n
}
