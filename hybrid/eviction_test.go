package hybrid

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/hybridlimit/hybridlimit/internal/redistest"
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
