package hybrid

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
)

// Micro-benchmarks of the hot path's parts, in process or on miniredis, so
// that they run without redis-server:
//
//	go test -run '^$' -bench 'Counters|Spend|DenyCache|Batching|Queue' -count 6 ./hybrid/
//
// Each trick they isolate is kept only while its benchmark shows it pays;
// DESIGN-NOTES ("Each hot-path trick pays or goes") quotes the figures.

// oneLine is the decision counters without stripes: every goroutine writes
// the same cache line.
type oneLine struct {
	n [numSources][2]atomic.Int64
}

func (c *oneLine) add(src Source, allowed bool) {
	o := 0
	if allowed {
		o = 1
	}
	c.n[src][o].Add(1)
}

// randomStripe is the counters with a random stripe per call.
type randomStripe struct {
	stripes [counterStripes]struct {
		n [numSources][2]atomic.Int64
		_ [64]byte
	}
}

func (c *randomStripe) add(src Source, allowed bool) {
	o := 0
	if allowed {
		o = 1
	}
	c.stripes[rand.IntN(counterStripes)].n[src][o].Add(1)
}

// BenchmarkCounters counts decisions from every processor at once: the
// counters as they are (a stripe per goroutine's stack), one shared line,
// and a random stripe per call. SourceRemote, which never yields, so that
// only the counting is measured.
func BenchmarkCounters(b *testing.B) {
	b.Run("stack-stripe", func(b *testing.B) {
		var c counters
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				c.add(SourceRemote, true)
			}
		})
	})
	b.Run("one-line", func(b *testing.B) {
		var c oneLine
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				c.add(SourceRemote, true)
			}
		})
	})
	b.Run("random-stripe", func(b *testing.B) {
		var c randomStripe
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				c.add(SourceRemote, true)
			}
		})
	})
}

// BenchmarkLeaseSpend is one decision served from a lease held for a hot
// key, from every processor at once: the spend, the counters and the
// occasional yield, no round trip (renewals are rare and in the
// background).
func BenchmarkLeaseSpend(b *testing.B) {
	lim, _ := newMini(b, 1, Config{Timeout: time.Second})
	ctx := context.Background()
	l := PerSecond(1_000_000_000)
	for range 10_000 { // hot: a lease is taken
		if _, err := lim.Allow(ctx, "hot", l); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := lim.Allow(ctx, "hot", l); err != nil {
				b.Fatal(err)
			}
		}
	})
	st := lim.Stats()
	b.ReportMetric(float64(st.Decisions[SourceLease])/float64(b.N+10_000), "lease-share")
}

// BenchmarkDenyCache is one decision answered by a remembered denial, from
// every processor at once (leases off, so that the denial cache answers).
func BenchmarkDenyCache(b *testing.B) {
	lim, _ := newMini(b, 1, Config{Timeout: time.Second, Lease: LeaseConfig{Disable: true}})
	ctx := context.Background()
	l := PerMinute(1)
	for range 2 {
		if _, err := lim.Allow(ctx, "abuser", l); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if r, _ := lim.Allow(ctx, "abuser", l); r.Source != SourceDenyCache {
				b.Fatalf("answer %+v, want SourceDenyCache", r)
			}
		}
	})
}

// BenchmarkBatching is one cold decision through the node's queue to one
// miniredis node, 64 goroutines at once: the hand-off, the batch, one
// multi-key script call per batch. miniredis's Lua is slow, so the figure
// is batching's cost per decision only relative to Batch.Disable's.
func BenchmarkBatching(b *testing.B) {
	for _, disable := range []bool{false, true} {
		b.Run("batch-disable="+strconv.FormatBool(disable), func(b *testing.B) {
			lim, _ := newMini(b, 1, Config{Timeout: 5 * time.Second, Lease: LeaseConfig{Disable: true}, DenyCache: DenyCacheConfig{Disable: true},
				Batch: BatchConfig{Disable: disable}})
			ctx := context.Background()
			l := PerMinute(1_000_000)
			var next atomic.Int64
			b.SetParallelism(32) // 64 goroutines on 2 processors
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					k := "k" + strconv.FormatInt(next.Add(1)%10_000, 10)
					if _, err := lim.Allow(ctx, k, l); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.StopTimer()
			st := lim.Stats()
			if calls := st.Nodes[0].Calls; calls > 0 {
				b.ReportMetric(float64(b.N)/float64(calls), "decisions/call")
			}
		})
	}
}

// BenchmarkColdDecisions: 64 goroutines, cold keys (uniform over 100,000,
// one token bucket each), one Limiter on 3 real redis-server nodes, with
// and without a worker's yield between round trips (nodeConfig.noYield).
// It reports the requests per round trip and the CPU per decision of this
// process (getrusage) and of the nodes (INFO cpu):
//
//	go test -run '^$' -bench ColdDecisions -benchtime 200000x -count 4 ./hybrid/
func BenchmarkColdDecisions(b *testing.B) {
	srv := redistest.StartN(b, 3)
	addrs := make([]string, len(srv))
	for i, s := range srv {
		addrs[i] = s.Addr()
	}
	keys := make([]string, 100_000)
	for i := range keys {
		keys[i] = "u:" + strconv.Itoa(i)
	}
	for _, yield := range []bool{true, false} {
		b.Run("yield="+strconv.FormatBool(yield), func(b *testing.B) {
			lim, err := New(Config{Addrs: addrs, Lease: LeaseConfig{Disable: true}})
			if err != nil {
				b.Fatal(err)
			}
			defer lim.Close()
			for _, nd := range *lim.topo.nodes.Load() {
				nd.cfg.noYield = !yield // before any worker starts
			}
			ctx := context.Background()
			l := PerMinute(1_000_000)
			var next atomic.Int64
			redis0 := serversCPU(b, srv)
			client0 := processCPU(b)
			calls0 := nodeCalls(lim)
			b.SetParallelism(32) // 64 goroutines on 2 processors
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := lim.Allow(ctx, keys[next.Add(7919)%int64(len(keys))], l); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.StopTimer()
			n := float64(b.N)
			b.ReportMetric(n/float64(nodeCalls(lim)-calls0), "decisions/call")
			b.ReportMetric((processCPU(b)-client0).Seconds()*1e6/n, "client-µs/decision")
			b.ReportMetric((serversCPU(b, srv)-redis0).Seconds()*1e6/n, "redis-µs/decision")
		})
	}
}

// processCPU is this process's CPU time, user and system.
func processCPU(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// serversCPU is the CPU time the servers have used, from INFO cpu.
func serversCPU(b *testing.B, srv []*redistest.Server) time.Duration {
	b.Helper()
	var total time.Duration
	for _, s := range srv {
		d, err := redistest.UsedCPU(context.Background(), s.Client(b))
		if err != nil {
			b.Fatal(err)
		}
		total += d
	}
	return total
}
