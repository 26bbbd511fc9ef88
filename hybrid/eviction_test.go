package hybrid

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
)

// syncBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestEvictingNodeIsWarned: New warns about a node whose maxmemory-policy
// can evict limiter keys, naming the node and the policy, and Stats says
// so; a noeviction node is not warned about.
func TestEvictingNodeIsWarned(t *testing.T) {
	lru := redistest.Start(t, redistest.WithArgs("--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lru"))
	safe := redistest.Start(t)
	var log syncBuffer
	lim, err := New(Config{Addrs: []string{lru.Addr(), safe.Addr()}, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer lim.Close()
	var warned []string
	for _, line := range strings.Split(log.String(), "\n") {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, "evict") {
			warned = append(warned, line)
		}
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "node="+lru.Addr()) || !strings.Contains(warned[0], "maxmemory-policy=allkeys-lru") {
		t.Errorf("eviction warnings %q, want one naming %s and allkeys-lru", warned, lru.Addr())
	}
	st := lim.Stats()
	if n := st.Nodes[nodeIndex(st, lru.Addr())]; n.EvictionPolicy != "allkeys-lru" || !n.MayEvict {
		t.Errorf("Stats of the allkeys-lru node: policy %q, MayEvict %v", n.EvictionPolicy, n.MayEvict)
	}
	if n := st.Nodes[nodeIndex(st, safe.Addr())]; n.EvictionPolicy != "noeviction" || n.MayEvict {
		t.Errorf("Stats of the noeviction node: policy %q, MayEvict %v", n.EvictionPolicy, n.MayEvict)
	}
}

// TestEvictionUnderPressure measures what eviction does to limits: a node
// under allkeys-lru, with a maxmemory just above what it holds, evicts
// limiter keys as other keys arrive, and every evicted key starts afresh.
// The test asserts that the node is reported as evicting and that callers
// see no error; it logs the over-admission (issue 10 measured 4.3 × the
// limit), which no limiter can prevent once Redis drops its state.
func TestEvictionUnderPressure(t *testing.T) {
	srv := redistest.Start(t, redistest.WithArgs("--maxmemory-policy", "allkeys-lru"))
	rdb := srv.Client(t)
	ctx := context.Background()
	used := redistest.InfoInt(t, rdb, "memory", "used_memory")
	if err := rdb.ConfigSet(ctx, "maxmemory", fmt.Sprint(used+(2<<20))).Err(); err != nil {
		t.Fatal(err)
	}
	lim, err := New(Config{Addrs: []string{srv.Addr()}, Timeout: 2 * time.Second, DenyCache: DenyCacheConfig{Disable: true}, Lease: LeaseConfig{Disable: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer lim.Close()
	if st := lim.Stats(); !st.Nodes[0].MayEvict {
		t.Fatalf("node under allkeys-lru with a maxmemory not reported as evicting: %+v", st.Nodes[0])
	}
	const keys, rounds = 400, 4
	l := PerMinute(10)
	admitted := 0
	ballast := string(make([]byte, 4096))
	for round := range rounds {
		for k := range keys {
			for range 15 {
				r, err := lim.Allow(ctx, fmt.Sprintf("evict:%d", k), l)
				if err != nil {
					t.Fatal(err)
				}
				if r.Allowed {
					admitted++
				}
			}
		}
		// Other data arrives and pushes limiter keys out.
		for i := range 2000 {
			rdb.Set(ctx, fmt.Sprintf("ballast:%d:%d", round, i), ballast, 0)
		}
	}
	evicted := redistest.InfoInt(t, rdb, "stats", "evicted_keys")
	t.Logf("allkeys-lru under pressure: %d PerMinute(10) keys admitted %d in %d rounds (%.1f × the limit), %d keys evicted",
		keys, admitted, rounds, float64(admitted)/float64(keys*10), evicted)
	if evicted == 0 {
		t.Errorf("no key was evicted: the test did not put the node under pressure")
	}
}
