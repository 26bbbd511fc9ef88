package remote

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
	"github.com/hybridlimit/hybridlimit/limit"
)

// These benchmarks need redis-server: each starts its own on a free port.
// One op is one decision; decisions/s is reported beside ns/op because the
// parallel benchmarks keep many calls in flight at once.
//
//	go test -run '^$' -bench . -benchtime 3s ./remote/

const benchKeys = 100_000

func benchKeyNames() []string {
	keys := make([]string, benchKeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("user:%d", i)
	}
	return keys
}

func benchStore(b *testing.B) (*Store, *redis.Client) {
	b.Helper()
	srv := redistest.Start(b)
	rdb := NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: 64})
	b.Cleanup(func() { rdb.Close() })
	s, err := New(rdb, Config{})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Load(context.Background()); err != nil {
		b.Fatal(err)
	}
	return s, rdb
}

// BenchmarkDecide: one key per script call, 64 goroutines, uniform over
// 100,000 keys each within its limit, beside redis_rate on the same server.
func BenchmarkDecide(b *testing.B) {
	keys := benchKeyNames()
	ctx := context.Background()
	l := limit.PerMinute(1_000_000)
	b.Run("impl=hybridlimit", func(b *testing.B) {
		s, rdb := benchStore(b)
		var next atomic.Uint64
		b.SetParallelism(64 / runtimeProcs())
		b.ReportAllocs()
		cpu0, scripts0 := serverCost(b, rdb)
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				k := keys[next.Add(7919)%benchKeys]
				if _, _, err := s.decide(ctx, k, 1, l); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "decisions/s")
		b.ReportMetric(1, "redis-calls/op")
		reportServerCost(b, rdb, cpu0, scripts0)
	})
	b.Run("impl=redis_rate", func(b *testing.B) {
		_, rdb := benchStore(b)
		lim := redis_rate.NewLimiter(rdb)
		rl := redis_rate.PerMinute(1_000_000)
		var next atomic.Uint64
		b.SetParallelism(64 / runtimeProcs())
		b.ReportAllocs()
		cpu0, scripts0 := serverCost(b, rdb)
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				k := keys[next.Add(7919)%benchKeys]
				if _, err := lim.Allow(ctx, k, rl); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "decisions/s")
		b.ReportMetric(1, "redis-calls/op")
		reportServerCost(b, rdb, cpu0, scripts0)
	})
}

// BenchmarkDecideMany: many keys per script call, 8 callers. One op is one
// decision; with batch=64 a call decides 64 keys in one round trip.
func BenchmarkDecideMany(b *testing.B) {
	keys := benchKeyNames()
	ctx := context.Background()
	l := []limit.Limit{limit.PerMinute(1_000_000)}
	for _, batch := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			s, rdb := benchStore(b)
			var next atomic.Uint64
			var calls atomic.Int64
			// 8 callers: with 64 keys a call, 512 decisions in flight.
			b.SetParallelism(max(1, 8/runtimeProcs()))
			b.ReportAllocs()
			cpu0, scripts0 := serverCost(b, rdb)
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				reqs := make([]Request, batch)
				out := make([]Result, batch)
				n := 0
				for pb.Next() {
					reqs[n] = req(keys[next.Add(7919)%benchKeys], 1, l)
					n++
					if n == batch {
						if err := s.DecideMany(ctx, reqs, out); err != nil {
							b.Error(err)
							return
						}
						calls.Add(1)
						n = 0
					}
				}
				if n > 0 {
					_ = s.DecideMany(ctx, reqs[:n], out[:n])
					calls.Add(1)
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "decisions/s")
			b.ReportMetric(float64(calls.Load())/float64(b.N), "redis-calls/op")
			reportServerCost(b, rdb, cpu0, scripts0)
		})
	}
}

func runtimeProcs() int { return max(1, runtime.GOMAXPROCS(0)) }

// serverCost is what a Redis server has spent so far: CPU (INFO cpu, user
// plus system) and time inside script commands (INFO commandstats, EVAL
// and EVALSHA), both in microseconds.
func serverCost(b *testing.B, rdb *redis.Client) (cpu, scripts float64) {
	b.Helper()
	info, err := rdb.Info(context.Background(), "cpu", "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		name, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch name {
		case "used_cpu_user", "used_cpu_sys":
			f, _ := strconv.ParseFloat(val, 64)
			cpu += f * 1e6
		case "cmdstat_eval", "cmdstat_evalsha", "cmdstat_fcall":
			for _, kv := range strings.Split(val, ",") {
				if v, ok := strings.CutPrefix(kv, "usec="); ok {
					f, _ := strconv.ParseFloat(v, 64)
					scripts += f
				}
			}
		}
	}
	return cpu, scripts
}

// reportServerCost reports the server's CPU and script time per decision
// since before (from serverCost).
func reportServerCost(b *testing.B, rdb *redis.Client, cpu0, scripts0 float64) {
	b.Helper()
	cpu, scripts := serverCost(b, rdb)
	b.ReportMetric((cpu-cpu0)/float64(b.N), "redis-cpu-µs/op")
	b.ReportMetric((scripts-scripts0)/float64(b.N), "script-µs/op")
}
