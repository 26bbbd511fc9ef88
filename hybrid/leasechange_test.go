package hybrid

import (
	"context"
	"testing"
	"time"

	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
)

// heat makes key hot under limits and checks that it is leased.
func heat(t *testing.T, lim *Limiter, key string, limits ...Limit) {
	t.Helper()
	for range 2000 {
		if _, err := lim.Allow(context.Background(), key, limits...); err != nil {
			t.Fatal(err)
		}
	}
	if r, _ := lim.Allow(context.Background(), key, limits...); r.Source != SourceLease {
		t.Fatalf("Allow(%q, %v) = %v after 2000 requests, want the lease", key, limits, r.Source)
	}
}

// TestLeaseFollowsTheLimits: a key leased under some limits and then asked
// with others gives the old lease back and leases the new pair (the old
// lease used to be held past its TTL and the key never leased again).
func TestLeaseFollowsTheLimits(t *testing.T) {
	srv := redistest.Start(t)
	lim, err := New(Config{Addrs: []string{srv.Addr()}, Timeout: 2 * time.Second, Lease: LeaseConfig{TTL: 300 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer lim.Close()
	heat(t, lim, "k", PerSecond(100_000))
	by := map[Source]int{}
	for range 2000 {
		r, _ := lim.Allow(context.Background(), "k", PerSecond(200_000))
		by[r.Source]++
	}
	if by[SourceLease] < 1500 {
		t.Errorf("after the limits changed: %v, want most answers from a new lease", by)
	}
	if st := lim.Stats(); st.Leases != 1 {
		t.Errorf("%d leases held, want 1 (the old one given back)", st.Leases)
	}
}

// TestLeaseExpiresUntouched: a lease nobody asks for any more is given back
// after its TTL, without a request for its key.
func TestLeaseExpiresUntouched(t *testing.T) {
	srv := redistest.Start(t)
	ttl := 200 * time.Millisecond
	lim, err := New(Config{Addrs: []string{srv.Addr()}, Timeout: 2 * time.Second, Lease: LeaseConfig{TTL: ttl}})
	if err != nil {
		t.Fatal(err)
	}
	defer lim.Close()
	heat(t, lim, "k", PerSecond(100_000))
	deadline := time.Now().Add(10 * ttl)
	for time.Now().Before(deadline) && lim.Stats().LeaseUnits > 0 {
		time.Sleep(ttl / 4)
	}
	if st := lim.Stats(); st.Leases != 0 || st.LeaseUnits != 0 {
		t.Errorf("%v after the TTL of %v: %d leases holding %d units, want none", 10*ttl, ttl, st.Leases, st.LeaseUnits)
	}
}

// TestLeaseFollowsTheRing: after RemoveNode, a key's lease taken from the
// removed node ends; nothing more is sent to that node's client, and the
// key is leased from its new owner.
func TestLeaseFollowsTheRing(t *testing.T) {
	srv := redistest.StartN(t, 2)
	lim, err := New(Config{Addrs: []string{srv[0].Addr(), srv[1].Addr()}, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer lim.Close()
	var key string
	for i := 0; key == ""; i++ {
		k := "moving:" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		if nd := lim.topo.locate(k); nd.name == srv[0].Addr() {
			key = k
		}
	}
	heat(t, lim, key, PerSecond(100_000))
	old := lim.topo.byName(srv[0].Addr())
	if err := lim.RemoveNode(srv[0].Addr()); err != nil {
		t.Fatal(err)
	}
	// A round trip sent before RemoveNode (a renewal of the lease) may
	// still be in flight: it was not sent after, but ends after.
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if n, _ := old.q.load(); n == 0 {
			break
		}
	}
	calls := old.calls.Load()
	by := map[Source]int{}
	for range 3000 {
		r, _ := lim.Allow(context.Background(), key, PerSecond(100_000))
		by[r.Source]++
	}
	if n := old.calls.Load() - calls; n != 0 {
		t.Errorf("%d round trips to the removed node after RemoveNode", n)
	}
	if by[SourceLease] < 2000 {
		t.Errorf("after the key moved: %v, want most answers from a lease of the new owner", by)
	}
	v, ok := lim.leases.entries.Load(key)
	if !ok || v.(*leaseEntry).node.name != srv[1].Addr() {
		t.Errorf("the key's lease is not from its new owner %s", srv[1].Addr())
	}
}
