package hybrid

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
)

// The benchmarks run 64 goroutines against 3 real redis-server nodes, one
// Limiter, each workload beside go-redis/redis_rate routed over the same
// nodes by the same ring. One op is one decision. They report decisions/s,
// p50 and p99 latency (every 8th decision timed) and Redis round trips per
// decision.
//
//	go test -run '^$' -bench . -benchtime 3s ./hybrid/

type workload struct {
	name  string
	keys  func(rng *rand.Rand) string
	limit Limit
}

func workloads() []workload {
	uniform := make([]string, 100_000)
	for i := range uniform {
		uniform[i] = fmt.Sprintf("u:%d", i)
	}
	return []workload{
		{"hot", func(*rand.Rand) string { return "hot" }, PerSecond(1_000_000_000)},
		{"overlimit", func(*rand.Rand) string { return "abuser" }, PerSecond(10_000)},
		{"zipf", nil, PerSecond(1000)}, // keys drawn per goroutine below
		{"uniform", func(r *rand.Rand) string { return uniform[r.IntN(len(uniform))] }, PerMinute(1_000_000)},
	}
}

func BenchmarkLimiter(b *testing.B) {
	srv := redistest.StartN(b, 3)
	var addrs []string
	for _, s := range srv {
		addrs = append(addrs, s.Addr())
	}
	zipfKeys := make([]string, 1_000_000)
	for i := range zipfKeys {
		zipfKeys[i] = fmt.Sprintf("z:%d", i)
	}
	for _, w := range workloads() {
		for _, impl := range []string{"hybridlimit", "redis_rate"} {
			b.Run("workload="+w.name+"/impl="+impl, func(b *testing.B) {
				lim, err := New(Config{Addrs: addrs})
				if err != nil {
					b.Fatal(err)
				}
				defer lim.Close()
				allow := func(ctx context.Context, key string) bool {
					r, err := lim.Allow(ctx, key, w.limit)
					if err != nil {
						b.Error(err)
					}
					return r.Allowed
				}
				var rrCalls atomic.Int64
				if impl == "redis_rate" {
					rr := map[string]*redis_rate.Limiter{}
					var clients []*redis.Client
					for _, a := range addrs {
						c := redis.NewClient(&redis.Options{Addr: a, PoolSize: 64})
						clients = append(clients, c)
						rr[a] = redis_rate.NewLimiter(c)
					}
					defer func() {
						for _, c := range clients {
							c.Close()
						}
					}()
					rl := redis_rate.Limit{Rate: int(w.limit.Rate), Burst: int(w.limit.Capacity()), Period: w.limit.Period}
					allow = func(ctx context.Context, key string) bool {
						name, _ := lim.topo.ring.Locate(key)
						rrCalls.Add(1)
						res, err := rr[name].Allow(ctx, key, rl)
						if err != nil {
							b.Error(err)
							return false
						}
						return res.Allowed > 0
					}
				}
				callsBefore := nodeCalls(lim)
				var mu sync.Mutex
				var lat []time.Duration
				var seed atomic.Uint64
				b.SetParallelism(64 / max(1, runtime.GOMAXPROCS(0)))
				b.ResetTimer()
				start := time.Now()
				b.RunParallel(func(pb *testing.PB) {
					rng := rand.New(rand.NewPCG(seed.Add(1), 1))
					zipf := rand.NewZipf(rng, 1.1, 1, uint64(len(zipfKeys)-1))
					ctx := context.Background()
					var mine []time.Duration
					i := 0
					for pb.Next() {
						var key string
						if w.keys == nil {
							key = zipfKeys[zipf.Uint64()]
						} else {
							key = w.keys(rng)
						}
						if i++; i%8 == 0 {
							t0 := time.Now()
							allow(ctx, key)
							mine = append(mine, time.Since(t0))
						} else {
							allow(ctx, key)
						}
					}
					mu.Lock()
					lat = append(lat, mine...)
					mu.Unlock()
				})
				elapsed := time.Since(start)
				b.StopTimer()
				slices.Sort(lat)
				if len(lat) > 0 {
					b.ReportMetric(float64(lat[len(lat)/2])/1e3, "p50-µs")
					b.ReportMetric(float64(lat[len(lat)*99/100])/1e3, "p99-µs")
				}
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "decisions/s")
				calls := float64(nodeCalls(lim) - callsBefore)
				if impl == "redis_rate" {
					calls = float64(rrCalls.Load())
				}
				b.ReportMetric(calls/float64(b.N), "redis-calls/op")
			})
		}
	}
}
