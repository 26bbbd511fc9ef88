package local

import (
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestIndexNumbers checks what the index's constants say: a slot is
// slotBytes, and the bits home takes are above those that choose a shard.
func TestIndexNumbers(t *testing.T) {
	if got := unsafe.Sizeof(slot{}); got != slotBytes {
		t.Errorf("unsafe.Sizeof(slot{}) = %d, want slotBytes (%d)", got, slotBytes)
	}
	if MaxShards > 1<<homeShift {
		t.Errorf("MaxShards = %d takes more than the %d low bits homeShift leaves to the shard", MaxShards, homeShift)
	}
}

// TestIndexMatchesMap drives the index and a Go map with the same random
// puts and deletes, on hashes chosen to collide in the table's slots, and
// checks after every step that they agree.
func TestIndexMatchesMap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var x index
	want := map[uint64]*entry{}
	entries := make([]*entry, 64)
	for i := range entries {
		entries[i] = &entry{}
	}
	// Few distinct high halves: long probe runs that wrap around.
	hash := func() uint64 { return uint64(r.IntN(6))<<32 | uint64(r.IntN(40)) }
	for step := 0; step < 20_000; step++ {
		h := hash()
		switch r.IntN(3) {
		case 0, 1:
			e := entries[r.IntN(len(entries))]
			x.put(h, e)
			want[h] = e
		default:
			x.del(h)
			delete(want, h)
		}
		if x.len() != len(want) {
			t.Fatalf("step %d: len() = %d, want %d", step, x.len(), len(want))
		}
		for k, e := range want {
			if got := x.get(k); got != e {
				t.Fatalf("step %d: get(%#x) = %p, want %p", step, k, got, e)
			}
		}
		if got := x.get(h); got != want[h] {
			t.Fatalf("step %d: get(%#x) = %p after the step, want %p", step, h, got, want[h])
		}
		if step%1000 == 999 {
			x.shrink()
		}
	}
	live := map[*entry]bool{}
	for _, e := range want {
		live[e] = true
	}
	calls := 0
	x.sample(func(e *entry) bool {
		calls++
		if !live[e] {
			t.Errorf("sample gave %p, not a head the index holds", e)
		}
		return calls < 3
	})
	if len(want) >= 50 && calls != 3 { // hundreds of draws over a table at least 3/8 full
		t.Errorf("sample called fn %d times, want 3 (it stops when fn returns false)", calls)
	}
	if len(x.heads()) != len(want) {
		t.Errorf("heads() has %d heads, want %d", len(x.heads()), len(want))
	}
}
