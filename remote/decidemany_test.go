package remote

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hybridlimit/hybridlimit/internal/testkit/conformance"
	"github.com/hybridlimit/hybridlimit/limit"
)

// TestDecideManyMatchesOneByOne: a multi-key decide call, whose limits
// travel once per set and whose requests name their set, answers every
// request exactly as deciding the requests one by one, in order, does.
// Random batches of decisions and leases over a few keys, so that one key
// comes several times in a batch (the later requests must see the earlier
// ones' charges), against single limits of each algorithm, a named one
// and sets of several; the test clock moves between batches. Give-backs of
// earlier leases travel in the batches too, and must do what GiveBack's
// own call does. On miniredis
// and on real redis-server, with the code as a function library and as
// scripts.
func TestDecideManyMatchesOneByOne(t *testing.T) {
	type pair struct{ many, one *Store }
	kinds := map[string]func(t *testing.T) (pair, clock){}
	for _, lt := range layouts {
		kinds[lt.name+"/miniredis"] = func(t *testing.T) (pair, clock) {
			s, m, c := newMiniIn(t, lt.l)
			rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), Protocol: 2})
			t.Cleanup(func() { rdb.Close() })
			return pair{s, otherStore(t, rdb, s)}, c
		}
		for _, m := range realModes {
			kinds[lt.name+"/redis/"+m.name] = func(t *testing.T) (pair, clock) {
				s, _, c := newRealModeIn(t, m.fn, lt.l)
				return pair{s, otherStore(t, s.rdb, s)}, c
			}
		}
	}
	pool := [][]limit.Limit{
		{limit.PerSecond(5)},
		{limit.PerMinute(100)},
		{{Algorithm: limit.LeakyBucket, Rate: 10, Period: time.Second, Burst: 4}},
		{{Algorithm: limit.FixedWindow, Rate: 6, Period: time.Second}},
		{{Algorithm: limit.SlidingWindowLog, Rate: 5, Period: time.Second}},
		{{Algorithm: limit.SlidingWindowCounter, Rate: 7, Period: time.Second}},
		{{Rate: 8, Period: time.Second, Name: "api"}},
		{limit.PerSecond(5), {Algorithm: limit.FixedWindow, Rate: 20, Period: time.Minute}},
		{{Algorithm: limit.SlidingWindowCounter, Rate: 9, Period: time.Second}, {Algorithm: limit.SlidingWindowLog, Rate: 12, Period: 2 * time.Second}},
	}
	for name, newPair := range kinds {
		t.Run(name, func(t *testing.T) {
			p, c := newPair(t)
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(7, 11))
			now := conformance.Base
			type held struct {
				req    Request
				at, of int64
			}
			var leases []held // granted by earlier batches, not yet given back
			gave := 0
			for batch := range 60 {
				c.set(t, now)
				reqs := make([]Request, 1+rng.IntN(40))
				for i := range reqs {
					key := "k" + strconv.Itoa(rng.IntN(5))
					limits := pool[rng.IntN(len(pool))]
					var err error
					if k := rng.IntN(6); k == 1 && len(leases) > 0 {
						j := rng.IntN(len(leases))
						h := leases[j]
						leases = append(leases[:j], leases[j+1:]...)
						reqs[i], err = h.req.GiveBack(1+rng.Int64N(h.of), h.at)
					} else if k == 0 {
						reqs[i], err = NewLease(key, 1+rng.Int64N(4), limits...)
					} else {
						reqs[i], err = NewDecision(key, 1+rng.Int64N(3), limits...)
					}
					if err != nil {
						t.Fatal(err)
					}
				}
				out := make([]Result, len(reqs))
				if err := p.many.DecideMany(ctx, reqs, out); err != nil {
					t.Fatalf("batch %d: DecideMany: %v", batch, err)
				}
				// Redis runs a call's give-backs first, then its
				// decisions, then its leases (runOrder).
				sent := make([]Result, len(reqs))
				for _, i := range runOrder(reqs, sent) {
					r := reqs[i]
					if r.give {
						gave++
						back := Request{key: r.key, n: 1, limits: r.limits}
						if err := p.one.GiveBack(ctx, back, r.at, r.n); err != nil {
							t.Fatalf("batch %d request %d: GiveBack: %v", batch, i, err)
						}
						if out[i] != (Result{}) {
							t.Fatalf("batch %d request %d: a give-back's result is %+v, want none", batch, i, out[i])
						}
						continue
					}
					want, err := p.one.Decide(ctx, r)
					if err != nil {
						t.Fatalf("batch %d request %d: Decide: %v", batch, i, err)
					}
					if out[i] != want {
						t.Fatalf("batch %d request %d (%s, n=%d, lease %v, %v):\nDecideMany = %+v\nDecide     = %+v",
							batch, i, r.key, r.n, r.lease, r.limits, out[i], want)
					}
					if r.lease && want.Granted > 0 {
						leases = append(leases, held{Request{key: r.key, n: 1, limits: r.limits}, want.At, want.Granted})
					}
				}
				now = now.Add(time.Duration(rng.IntN(300)) * time.Millisecond)
			}
			if gave < 20 {
				t.Fatalf("%d give-backs in the batches, want at least 20", gave)
			}
		})
	}
}

// otherStore is a store beside s on client rdb, with s's scripts and the
// form of code s runs, under a prefix of its own.
func otherStore(t *testing.T, rdb Client, s *Store) *Store {
	t.Helper()
	o, err := New(rdb, Config{Prefix: "other:", Layout: s.layout})
	if err != nil {
		t.Fatal(err)
	}
	o.scripts = s.scripts
	o.fn.Store(s.fn.Load())
	return o
}
