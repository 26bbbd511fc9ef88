package local

import (
	"math"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/hybridlimit/hybridlimit/internal/algo"
	"github.com/hybridlimit/hybridlimit/internal/limitspec"
	"github.com/hybridlimit/hybridlimit/limit"
)

// Sizes and times of the cleanup: on inserts, on eviction and by Sweep.
const (
	// tidySample is how many entries an insert into a shard with room
	// examines, dropping the expired ones.
	tidySample = 2
	// evictSample is how many entries an insert into a full shard examines:
	// it drops the expired ones or, when there are none, the least recently
	// used.
	evictSample = 8
	// rebuildMin is the peak number of keys (chains) of a shard below which
	// Sweep never shrinks its index.
	rebuildMin = 1024
	// retainMin is the shortest time, in microseconds, an expired entry is
	// kept by the cleanup done on inserts (see entry.retired).
	retainMin = int64(time.Minute / time.Microsecond)
)

// entry is the state of one limit of one key. The entries of one key form a
// chain from the one its shard's index holds.
//
// The fields a decision reads sit in the first two of the entry's three
// cache lines: what a lookup compares and the Spec in the first, the State
// and the start of a short key's bytes in the second. Entries are 192 bytes,
// a size class the Go allocator keeps 64-byte aligned, so those are exactly
// two lines (TestEntryLayout). The entry keeps the limit's Spec rather than
// the Limit: the Spec identifies the limit (algo.Spec.Matches) and is what
// a decision computes with.
type entry struct {
	spec  algo.Spec  // the limit's integer form, computed at insert (again when a named limit changes)
	key   string     // the key: in buf, or a copy of a longer one
	used  int64      // µs of the last request that touched the entry
	state algo.State // the limit's state for the key
	buf   [inlineKey]byte
	h     uint64 // the key's hash: the entry's chain in its shard's index
	next  *entry // the next entry of the same hash, or nil
	name  string // the limit's Name: read only for named limits (spec.Named)
}

// inlineKey is the longest key stored in its entry: up to 16 bytes share
// the State's cache line.
const inlineKey = 48

// newEntry returns an entry for key holding its own copy of the key, in the
// entry when it fits.
func newEntry(key string) *entry {
	e := new(entry)
	if len(key) > inlineKey {
		e.key = strings.Clone(key)
		return e
	}
	n := copy(e.buf[:], key)
	e.key = unsafe.String(&e.buf[0], n) // points into e: keeps it alive
	return e
}

// expired reports whether the entry's state no longer matters at nowUS: it
// would decide exactly as a fresh state, so it may be dropped. The instant is
// computed from the state when needed (on inserts and sweeps) rather than
// stored at every charge, which keeps a division off every decision.
func (e *entry) expired(nowUS int64) bool { return nowUS >= e.spec.IdleAt(&e.state) }

// retired reports whether the entry has been expired at nowUS for a minute or
// one period of its limit, whichever is longer. The cleanup done on inserts
// drops only those, so that a key which comes back soon finds its entry:
// without this slack, a generous limit (whose entries expire soon after each
// request) would make most decisions insert their entry again.
func (e *entry) retired(nowUS int64) bool {
	idle := e.spec.IdleAt(&e.state)
	return nowUS >= idle && nowUS-idle >= max(e.spec.P*e.spec.Q, retainMin)
}

// shard is one lock's worth of entries. All the limits of one key live in the
// same shard, so a request is decided under a single lock.
//
// Its index maps the hash of a key to the first entry of a chain: one entry
// per (key, limit) pair of the keys of that hash (almost always one key),
// found with one probe of the index in the common case and a short walk
// comparing the key and the limit (see index).
type shard struct {
	// The fields every decision reads come first, in one cache line.
	mu sync.Mutex
	// last is the entry of the latest single-limit request: a hot key is
	// found without a lookup. Cleared when the entry is dropped.
	last     *entry
	lastHash uint64 // hash of last's key: other keys skip last without reading it
	m        index  // key hash -> chain of entries

	n    int // entries in all chains
	cap  int // most entries the shard may hold
	peak int // most keys (chains) m held since Sweep last shrank it

	_ [48]byte // to two 64-byte cache lines
}

// is reports whether e holds the state of (key, lim): an unnamed limit's
// entry is found by the limit, a named one's by its name and algorithm, so
// that a named limit that changed finds its entry, to convert it (see
// changed).
func (e *entry) is(key string, lim *limit.Limit) bool {
	if lim.Name == "" {
		return limitspec.Matches(&e.spec, lim) && e.key == key
	}
	return e.spec.Named && e.spec.Algorithm == algo.ID(lim.Algorithm) && e.key == key && e.name == lim.Name
}

// changed reports whether e, found for lim, was written for another limit
// of lim's name.
func (e *entry) changed(lim *limit.Limit) bool {
	return lim.Name != "" && !limitspec.Matches(&e.spec, lim)
}

// convert makes e's state that of sp, a named limit that changed, at nowUS
// (algo.Spec.Convert).
func (e *entry) convert(sp algo.Spec, nowUS int64) {
	sp.Convert(&e.spec, &e.state, nowUS)
	e.spec = sp
}

// find returns the entry of (key, lim) in the chain from head, or nil: nil
// also when lim is invalid and unnamed.
func find(head *entry, key string, lim *limit.Limit) *entry {
	for e := head; e != nil; e = e.next {
		if e.is(key, lim) {
			return e
		}
	}
	return nil
}

// lookup returns the entry of (key, lim), key hashing to h, or nil: nil also
// when lim is invalid, which no entry matches. The last entry is read only
// when its key hashed the same, so a request for another key does not touch
// it.
func (sh *shard) lookup(h uint64, key string, lim *limit.Limit) *entry {
	if e := sh.last; e != nil && sh.lastHash == h && e.is(key, lim) {
		return e
	}
	return find(sh.m.get(h), key, lim)
}

// drop unlinks e, an entry of the chain from head.
func (sh *shard) drop(head, e *entry) {
	switch {
	case head == e && e.next == nil:
		sh.m.del(e.h)
	case head == e:
		sh.m.put(e.h, e.next)
	default:
		p := head
		for p.next != e {
			p = p.next
		}
		p.next = e.next
	}
	e.next = nil
	sh.n--
	if sh.last == e {
		sh.last = nil
	}
}

// group holds the limits of one request and their entries, in storage
// provided by the caller (arrays on its stack in the common case). Each
// slice is as long as the request's limits. It is filled by index, never by
// append, so that it stays on the caller's stack.
type group struct {
	entries []*entry
	states  []*algo.State
	specs   []algo.Spec
	fresh   []bool // inserted by this request
}

// groupBuf is the storage of a group of up to maxLimits limits, meant to live
// on the stack of the function deciding the request.
type groupBuf struct {
	entries [maxLimits]*entry
	states  [maxLimits]*algo.State
	specs   [maxLimits]algo.Spec
	fresh   [maxLimits]bool
}

// group returns an empty group for n limits, in b when they fit.
func (b *groupBuf) group(n int) group {
	if n > maxLimits {
		return group{entries: make([]*entry, n), states: make([]*algo.State, n), specs: make([]algo.Spec, n), fresh: make([]bool, n)}
	}
	return group{entries: b.entries[:n], states: b.states[:n], specs: b.specs[:n], fresh: b.fresh[:n]}
}

// holds reports whether e belongs to g.
func (g *group) holds(e *entry) bool {
	if g == nil {
		return false
	}
	for _, h := range g.entries {
		if h == e {
			return true
		}
	}
	return false
}

// gather fills g with the entries of the limits of one request for key,
// which are distinct, inserting those missing. It checks every limit in
// order, then cost against it: at least 1, and at most its capacity when
// capped. It does so before it inserts anything, so bad input changes
// nothing, and then returns the index of the offending limit and, for an
// invalid limit, the error of limit.Limit.Validate (from limitspec.Of), or
// the number of limits and
// ErrTooManyLimits when they cannot all fit in the shard. It returns -1, nil
// when g is ready. Called with sh.mu held.
func (sh *shard) gather(g *group, h uint64, key string, limits []limit.Limit, cost int64, capped bool, nowUS int64) (int, error) {
	head := sh.m.get(h)
	missing, changed := false, false
	for i := range limits {
		var sp algo.Spec
		e := find(head, key, &limits[i])
		if e != nil && !e.changed(&limits[i]) {
			sp = e.spec
		} else {
			var err error
			if sp, err = limitspec.Of(limits[i]); err != nil {
				return i, err
			}
			missing = missing || e == nil
			changed = changed || e != nil
		}
		if cost < 1 || capped && cost > sp.C {
			return i, nil
		}
		g.entries[i], g.specs[i], g.fresh[i] = e, sp, e == nil
	}
	if changed {
		for i, e := range g.entries {
			if e != nil && e.changed(&limits[i]) {
				e.convert(g.specs[i], nowUS)
			}
		}
	}
	if missing {
		if len(limits) > sh.cap {
			return len(limits), ErrTooManyLimits
		}
		for i, e := range g.entries {
			if e == nil {
				g.entries[i] = sh.insert(g, h, key, &limits[i], g.specs[i], nowUS)
			}
		}
	}
	for i, e := range g.entries {
		g.states[i] = &e.state
	}
	return -1, nil
}

// settle records the use of g's entries at nowUS. Entries the request
// inserted but did not charge (it was denied) are removed again, so that a
// denial leaves no trace.
func (sh *shard) settle(g *group, charged bool, nowUS int64) {
	for i, e := range g.entries {
		if !charged && g.fresh[i] {
			sh.drop(sh.m.get(e.h), e)
			continue
		}
		e.used = nowUS
	}
}

// insert adds a fresh entry for key and lim, of Spec sp, at the end of
// key's chain, first making room when the shard is full (and tidying a little
// when it is not). Entries in g (which may be nil) are never dropped. Called
// with sh.mu held.
func (sh *shard) insert(g *group, h uint64, key string, lim *limit.Limit, sp algo.Spec, nowUS int64) *entry {
	if sh.n >= sh.cap {
		sh.evict(g, nowUS)
	} else {
		sh.tidy(g, nowUS)
	}
	e := newEntry(key) // a copy the caller cannot change or pin
	e.h, e.spec, e.used, e.name = h, sp, nowUS, lim.Name
	if head := sh.m.get(h); head != nil {
		p := head
		for ; ; p = p.next {
			if p.key == key {
				e.key = p.key // share the copy with the key's other limits
			}
			if p.next == nil {
				break
			}
		}
		p.next = e
	} else {
		sh.m.put(h, e)
		sh.peak = max(sh.peak, sh.m.len())
	}
	sh.n++
	return e
}

// tidy drops the retired entries among a few of the shard's, taken from a
// random place of its index. Called with sh.mu held.
func (sh *shard) tidy(g *group, nowUS int64) {
	n := 0
	sh.m.sample(func(head *entry) bool {
		for e := head; e != nil; {
			next := e.next
			if e.retired(nowUS) && !g.holds(e) {
				sh.drop(head, e)
				if e == head {
					head = next
				}
			}
			if n++; n == tidySample {
				return false
			}
			e = next
		}
		return true
	})
}

// evict frees at least one place in the shard: it drops the expired entries
// among a sample of evictSample entries not in g or, when none is expired,
// the least recently used of them. Called with sh.mu held.
func (sh *shard) evict(g *group, nowUS int64) {
	var (
		victim *entry
		oldest int64 = math.MaxInt64
		freed  bool
		n      int
	)
	sh.m.sample(func(head *entry) bool {
		for e := head; e != nil; {
			next := e.next
			switch {
			case g.holds(e):
				e = next
				continue
			case e.expired(nowUS):
				sh.drop(head, e)
				if e == head {
					head = next
				}
				freed = true
			case e.used < oldest:
				victim, oldest = e, e.used
			}
			if n++; n == evictSample {
				return false
			}
			e = next
		}
		return true
	})
	if !freed && victim != nil {
		sh.drop(sh.m.get(victim.h), victim)
	}
}

// sweep drops every expired entry and, when the shard holds far fewer keys
// than it once did, moves them to a smaller index so that the memory of the
// old one is released. Called with sh.mu held.
func (sh *shard) sweep(nowUS int64) {
	for _, head := range sh.m.heads() {
		for e := head; e != nil; {
			next := e.next
			if e.expired(nowUS) {
				sh.drop(head, e)
				if e == head {
					head = next
				}
			}
			e = next
		}
	}
	if sh.peak >= rebuildMin && sh.m.len() < sh.peak/4 {
		sh.m.shrink()
		sh.peak = sh.m.len()
	}
}
