package local

import "math/rand/v2"

// index maps a key hash to the head of its chain of entries: an open-
// addressing table with linear probing, in place of a Go map. A lookup is
// one probe of a slotBytes slot in the common case, and the slots sit in
// one array. BenchmarkIndexGet, BenchmarkIndexChurn and BenchmarkIndexSample
// measure it against a Go map used the same way (mapIndex): see
// DESIGN-NOTES.md, "Each hot-path trick pays or goes". Not safe for
// concurrent use: the shard's mutex guards it.
type index struct {
	slots []slot // a power of two long, or nil while empty
	n     int    // slots in use
}

// slot is one place of the table; e == nil marks it empty.
type slot struct {
	h uint64
	e *entry
}

// The numbers of the table.
const (
	// minSlots is the size of a table's first allocation.
	minSlots = 8
	// loadNum/loadDen is the most of its slots a table fills before it
	// doubles (3/4), so that probe runs stay short; a table just doubled
	// is 3/8 full.
	loadNum, loadDen = 3, 4
	// slotBytes is the size of a slot, a hash and a pointer: four to a
	// cache line (TestIndexNumbers).
	slotBytes = 16
	// homeShift drops the low half of a hash, which chose the shard
	// (Limiter.shardOf takes at most 16 bits: MaxShards; TestIndexNumbers),
	// before the table takes a slot from it.
	homeShift = 32
)

// home is the slot a hash probes first. The low bits of h chose the shard,
// so the table takes its position from the high ones.
func home(h uint64, mask int) int { return int(h>>homeShift) & mask }

// fits reports whether n hashes fit in a table of size slots.
func fits(n, size int) bool { return n*loadDen <= size*loadNum }

// get returns the head of h's chain, or nil.
func (x *index) get(h uint64) *entry {
	if x.n == 0 {
		return nil
	}
	mask := len(x.slots) - 1
	for i := home(h, mask); ; i = (i + 1) & mask {
		s := &x.slots[i]
		if s.e == nil {
			return nil
		}
		if s.h == h {
			return s.e
		}
	}
}

// put makes e the head of h's chain, adding h if it is not present.
func (x *index) put(h uint64, e *entry) {
	if !fits(x.n+1, len(x.slots)) {
		x.resize(max(minSlots, len(x.slots)*2))
	}
	mask := len(x.slots) - 1
	for i := home(h, mask); ; i = (i + 1) & mask {
		s := &x.slots[i]
		if s.e == nil {
			*s = slot{h: h, e: e}
			x.n++
			return
		}
		if s.h == h {
			s.e = e
			return
		}
	}
}

// del removes h, if present, moving later slots of its probe run back so
// that no lookup meets a hole before its hash (backward-shift deletion).
func (x *index) del(h uint64) {
	if x.n == 0 {
		return
	}
	mask := len(x.slots) - 1
	i := home(h, mask)
	for ; x.slots[i].h != h; i = (i + 1) & mask {
		if x.slots[i].e == nil {
			return
		}
	}
	if x.slots[i].e == nil {
		return
	}
	for j := (i + 1) & mask; x.slots[j].e != nil; j = (j + 1) & mask {
		// The slot at j may move to the hole at i only if its home is not
		// in (i, j], cyclically: it would then be found past the hole.
		k := home(x.slots[j].h, mask)
		if (j > i && (k <= i || k > j)) || (j < i && k <= i && k > j) {
			x.slots[i] = x.slots[j]
			i = j
		}
	}
	x.slots[i] = slot{}
	x.n--
}

// len returns the number of hashes held.
func (x *index) len() int { return x.n }

// resize moves the hashes to a table of size slots (a power of two that
// holds them).
func (x *index) resize(size int) {
	old := x.slots
	x.slots, x.n = make([]slot, size), 0
	for _, s := range old {
		if s.e != nil {
			x.put(s.h, s.e)
		}
	}
}

// shrink reallocates the table at the size its hashes need, releasing the
// memory of a table that once held many more.
func (x *index) shrink() {
	size := minSlots
	for !fits(x.n, size) {
		size *= 2
	}
	if size < len(x.slots) {
		x.resize(size)
	}
	if x.n == 0 {
		x.slots = nil
	}
}

// sample calls fn with the chain heads in a random order: from a random
// slot, by a random odd stride, so that the slots visited are spread over
// the table (adjacent slots of a probe run would be drawn together) and one
// pass meets every slot. It stops when fn returns false. fn may delete from
// the index; a chain moved by the deletion may then be seen twice or not at
// all, which suits sampling.
func (x *index) sample(fn func(head *entry) bool) {
	if x.n == 0 {
		return
	}
	mask := uint64(len(x.slots) - 1)
	r := rand.Uint64()
	at, step := r&mask, (r>>32)|1
	for range len(x.slots) {
		if e := x.slots[at].e; e != nil && !fn(e) {
			return
		}
		at = (at + step) & mask
	}
}

// heads returns every chain head, for a full pass that deletes as it goes.
func (x *index) heads() []*entry {
	out := make([]*entry, 0, x.n)
	for _, s := range x.slots {
		if s.e != nil {
			out = append(out, s.e)
		}
	}
	return out
}
