package hybrid

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
)

// TestBurstAdmitsTheLimit: 2 × the limit goroutines (at least 50) ask a
// fresh key at once, spread over 1, 2 or 4 Limiters with the library's
// defaults (leases, the denial cache and batching on), on a ring of three
// redis-server nodes and on a 3-master Cluster: exactly the limit is
// admitted, for all five algorithms and limits of 1, 3, 10 and 100 a
// minute. (A lease taken in the middle of a burst used to take units the
// burst's own requests needed: FixedWindow 10/min admitted 5 of 50 at
// once.) Bounded: 120 bursts per topology, each of at most 200 calls.
func TestBurstAdmitsTheLimit(t *testing.T) {
	topologies := []struct {
		name  string
		nodes func(t *testing.T) func() []Node
	}{
		{"ring", func(t *testing.T) func() []Node {
			srv := redistest.StartN(t, 3)
			return func() []Node {
				var ns []Node
				for _, s := range srv {
					c := s.Client(t)
					ns = append(ns, Node{Name: s.Addr(), Client: c})
				}
				return ns
			}
		}},
		{"cluster", func(t *testing.T) func() []Node {
			c := redistest.StartCluster(t, 3, 0)
			return func() []Node {
				rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
				t.Cleanup(func() { rdb.Close() })
				return []Node{{Name: "cluster", Client: rdb}}
			}
		}},
	}
	algorithms := []Algorithm{TokenBucket, LeakyBucket, FixedWindow, SlidingWindowLog, SlidingWindowCounter}
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			nodes := topo.nodes(t)
			for _, instances := range []int{1, 2, 4} {
				var lims []*Limiter
				for range instances {
					lim, err := New(Config{Nodes: nodes(), Timeout: time.Second})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { lim.Close() })
					lims = append(lims, lim)
				}
				for _, alg := range algorithms {
					for _, rate := range []int64{1, 3, 10, 100} {
						l := Limit{Algorithm: alg, Rate: rate, Period: time.Minute}
						key := fmt.Sprintf("burst:%s:%d:%v:%d", topo.name, instances, alg, rate)
						got, sources := burst(lims, key, int(max(2*rate, 50)), l)
						if got != rate {
							t.Errorf("%d Limiters, %v %d/min, %d at once: %d admitted (sources %v), want %d",
								instances, alg, rate, max(2*rate, 50), got, sources, rate)
						}
					}
				}
			}
		})
	}
}

// burst has n goroutines ask for key at once, goroutine i through
// lims[i%len(lims)], and returns how many were admitted, and the answers
// by Source.
func burst(lims []*Limiter, key string, n int, l Limit) (int64, map[Source]int64) {
	var admitted atomic.Int64
	var mu sync.Mutex
	sources := map[Source]int64{}
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			r, err := lims[i%len(lims)].Allow(context.Background(), key, l)
			if err != nil {
				return
			}
			if r.Allowed {
				admitted.Add(1)
			}
			mu.Lock()
			sources[r.Source]++
			mu.Unlock()
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
	return admitted.Load(), sources
}
