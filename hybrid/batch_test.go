package hybrid

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
)

// TestBatchCoalescesAndStaysExact: concurrent requests for one node share
// round trips, and every key still admits exactly its limit.
func TestBatchCoalescesAndStaysExact(t *testing.T) {
	srv := redistest.Start(t)
	lim, err := New(Config{Addrs: []string{srv.Addr()}, Timeout: 2 * time.Second, DenyCache: DenyCacheConfig{Disable: true}, Lease: LeaseConfig{Disable: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer lim.Close()
	ctx := context.Background()
	const keys, workers, perKey = 40, 32, 150
	l := PerHour(100)
	admitted := make([]atomic.Int64, keys)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < keys*perKey; i += workers {
				k := i % keys
				r, err := lim.Allow(ctx, fmt.Sprintf("batch:%d", k), l)
				if err != nil {
					t.Error(err)
					return
				}
				if r.Source != SourceRemote {
					t.Errorf("answered by %v", r.Source)
					return
				}
				if r.Allowed {
					admitted[k].Add(1)
				}
			}
		}()
	}
	wg.Wait()
	for k := range admitted {
		if got := admitted[k].Load(); got != 100 {
			t.Errorf("key %d: %d admitted of %d, want exactly 100", k, got, perKey)
		}
	}
	st := lim.Stats()
	decisions := st.Decisions[SourceRemote]
	calls, batched := st.Nodes[0].Calls, st.Nodes[0].Batched
	if batched == 0 || calls >= decisions {
		t.Errorf("%d decisions in %d round trips (%d batched): no coalescing", decisions, calls, batched)
	}
	t.Logf("%d decisions in %d round trips (%.2f calls per decision), %d of them in batches", decisions, calls, float64(calls)/float64(decisions), batched)
}

// TestBatchIdleNodeAskedAtOnce: a lone request is not held for a batch.
func TestBatchIdleNodeAskedAtOnce(t *testing.T) {
	lim, _ := newMini(t, 1, Config{})
	ctx := context.Background()
	for i := 0; i < 10; i++ {
		if _, err := lim.Allow(ctx, "k", PerSecond(100)); err != nil {
			t.Fatal(err)
		}
	}
	st := lim.Stats()
	if st.Nodes[0].Calls != 10 || st.Nodes[0].Batched != 0 {
		t.Errorf("sequential requests: %d round trips, %d batched; want 10, 0", st.Nodes[0].Calls, st.Nodes[0].Batched)
	}
}

func TestBatchDisabled(t *testing.T) {
	srv := redistest.Start(t)
	// A generous Timeout: this counts round trips, and a 2-core CI machine
	// running -race can hold one past 50 ms, open the breaker and answer
	// the rest locally.
	lim, err := New(Config{Addrs: []string{srv.Addr()}, Timeout: 5 * time.Second, Batch: BatchConfig{Disable: true}, Lease: LeaseConfig{Disable: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer lim.Close()
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				lim.Allow(ctx, fmt.Sprintf("k:%d", w), PerSecond(1000))
			}
		}()
	}
	wg.Wait()
	st := lim.Stats()
	if st.Nodes[0].Batched != 0 || st.Nodes[0].Calls != 800 {
		t.Errorf("with batching off: %d round trips, %d batched; want 800, 0", st.Nodes[0].Calls, st.Nodes[0].Batched)
	}
}
