package remote

import (
	"context"
	"strconv"
	"testing"

	"github.com/hybridlimit/hybridlimit/limit"
)

// BenchmarkScriptVariant measures what the script variants per set of
// algorithms save: Redis runs a script's whole chunk on every call, so the
// decide script of one algorithm defines fewer functions per call than the
// one of all five. A call of 1 and of 16 requests against one SlidingWindowCounter
// limit (the general path: no take.lua), on real redis-server, through
// each; redis-us/call is the server's CPU per call (INFO cpu):
//
//	go test -run '^$' -bench ScriptVariant -benchtime 2000x ./remote/
func BenchmarkScriptVariant(b *testing.B) {
	l := limit.Limit{Algorithm: limit.SlidingWindowCounter, Rate: 1_000_000, Period: 60_000_000_000}
	for _, v := range []struct {
		name string
		mask int
	}{{"one-algorithm", 1 << limit.SlidingWindowCounter}, {"all-algorithms", numMasks - 1}} {
		for _, n := range []int{1, 16} {
			b.Run(v.name+"/requests="+strconv.Itoa(n), func(b *testing.B) {
				s, rdb := benchStore(b)
				s.fn.Store(false) // the variants are scripts'
				ctx := context.Background()
				reqs := make([]Request, n)
				for i := range reqs {
					var err error
					if reqs[i], err = NewDecision("k"+strconv.Itoa(i), 1, l); err != nil {
						b.Fatal(err)
					}
				}
				c := s.decideCall(reqs)
				c.sc = s.scripts.eval[entryDecide][v.mask]
				if err := s.runInts(ctx, c).Err(); err != nil { // loaded
					b.Fatal(err)
				}
				cpu0, _ := serverCost(b, rdb)
				b.ResetTimer()
				for b.Loop() {
					if err := s.runInts(ctx, c).Err(); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				cpu1, _ := serverCost(b, rdb)
				b.ReportMetric((cpu1-cpu0)/float64(b.N), "redis-us/call")
			})
		}
	}
}
