package hybrid

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
	"github.com/hybridlimit/hybridlimit/remote"
)

// The property test of the whole limiter: random schedules of concurrent
// AllowN, AllowAtMost, Peek, Refund and Reset over 1-8 Limiters that share
// three nodes, with the library's defaults (leases, the denial cache and
// batching on), checked against the bounds docs/leases.md states. Each
// schedule comes from a seed; a failure prints the seed, and the schedule
// shrunk to fewer rounds that still fail.
//
//	go test -run TestLimiterProperties ./hybrid/                          # CI: propCISchedules per backend
//	go test -run TestLimiterProperties ./hybrid/ -args -prop.schedules=500  # a soak
//	go test -run TestLimiterProperties ./hybrid/ -args -prop.seed=42        # one schedule again
var (
	propSchedules = flag.Int("prop.schedules", 0, "TestLimiterProperties: schedules per backend (0: propCISchedules)")
	propSeed      = flag.Uint64("prop.seed", 0, "TestLimiterProperties: run only the schedule of this seed")
)

// propCISchedules is how many schedules CI runs per backend: about 20 s in
// all on 2 cores under -race (300 per backend, without -race: 85 s).
const propCISchedules = 10

// propShrinkRuns bounds how many times a failing schedule is run again
// while it is shrunk.
const propShrinkRuns = 16

type propKind int

const (
	propAllow propKind = iota
	propAtMost
	propPeek
	propRefund
	propReset
)

var propKindNames = []string{"AllowN", "AllowAtMost", "Peek", "Refund", "Reset"}

// propKey is a key of a schedule: its limits, and for a key with a named
// limit a second version of them (the rule changed), used from round
// switchAt on.
type propKey struct {
	name     string
	versions [][]Limit
	switchAt int
}

func (k propKey) limits(round int) []Limit {
	if len(k.versions) > 1 && round >= k.switchAt {
		return k.versions[1]
	}
	return k.versions[0]
}

type propOp struct {
	kind propKind
	inst int // which Limiter
	key  int
	n    int64
}

// propRound is ops run at once; a round of Resets resets one key on every
// Limiter (so that no instance's memory of the key outlives it), alone.
type propRound struct{ ops []propOp }

type propSchedule struct {
	seed   uint64
	insts  int
	keys   []propKey
	rounds []propRound
}

// newSchedule draws a schedule from seed.
func newSchedule(seed uint64) propSchedule {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	s := propSchedule{seed: seed, insts: 1 + rng.IntN(8)}
	algs := []Algorithm{TokenBucket, LeakyBucket, FixedWindow, SlidingWindowLog, SlidingWindowCounter}
	rate := func() int64 {
		if rng.IntN(2) == 0 {
			return 1 + rng.Int64N(10) // small: never leased
		}
		return 500 + rng.Int64N(2500) // large: leased when hot
	}
	nkeys := 2 + rng.IntN(5)
	for k := range nkeys {
		key := propKey{name: fmt.Sprintf("p%d:k%d", seed, k)}
		var ls []Limit
		for i := range 1 + min(rng.IntN(3), 1) {
			// A second limit has a period of its own: one limit given
			// twice is bad input.
			ls = append(ls, Limit{Algorithm: algs[rng.IntN(len(algs))], Rate: rate(), Period: time.Duration(i+1) * time.Hour})
		}
		key.versions = [][]Limit{ls}
		if rng.IntN(4) == 0 { // a named limit whose rule changes midway
			ls[0].Name = "rule"
			alt := append([]Limit(nil), ls...)
			alt[0].Rate = max(1, ls[0].Rate*int64(1+rng.IntN(3))/2)
			key.versions = append(key.versions, alt)
		}
		s.keys = append(s.keys, key)
	}
	nrounds := 40 + rng.IntN(80)
	for k := range s.keys {
		s.keys[k].switchAt = rng.IntN(nrounds)
	}
	for r := range nrounds {
		if rng.IntN(30) == 0 {
			k := rng.IntN(nkeys)
			s.rounds = append(s.rounds, propRound{ops: []propOp{{kind: propReset, key: k}}})
			continue
		}
		var round propRound
		for range 1 + rng.IntN(48) {
			k := rng.IntN(nkeys)
			if rng.IntN(2) == 0 {
				k = 0 // a hot key
			}
			op := propOp{key: k, inst: rng.IntN(s.insts), n: 1 + rng.Int64N(3)}
			switch x := rng.IntN(20); {
			case x < 13:
				op.kind = propAllow
			case x < 16:
				op.kind = propAtMost
			case x < 18:
				op.kind = propPeek
			default:
				op.kind = propRefund
			}
			op.n = min(op.n, minCapacity(s.keys[k].limits(r)))
			round.ops = append(round.ops, op)
		}
		s.rounds = append(s.rounds, round)
	}
	return s
}

func (s propSchedule) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d: %d Limiters, %d rounds\n", s.seed, s.insts, len(s.rounds))
	for i, k := range s.keys {
		fmt.Fprintf(&b, "  key %d %s: %v", i, k.name, k.versions[0])
		if len(k.versions) > 1 {
			fmt.Fprintf(&b, ", from round %d %v", k.switchAt, k.versions[1])
		}
		b.WriteByte('\n')
	}
	for r, round := range s.rounds {
		fmt.Fprintf(&b, "  round %d:", r)
		for _, op := range round.ops {
			fmt.Fprintf(&b, " %s(L%d,k%d,%d)", propKindNames[op.kind], op.inst, op.key, op.n)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// propEpoch is what one key saw between two resets.
type propEpoch struct {
	demand, granted, refunded int64 // units
	capMin, capMax            int64
	maxN                      int64
	start, end                time.Time
	rates                     []Limit // every limit used, for the refill
}

// propBackend is a set of three nodes the schedules share, and whether
// their clock stands still (miniredis: the bounds are then exact, with no
// refill).
type propBackend struct {
	addrs  []string
	frozen bool
	layout Layout
}

// TestLimiterProperties runs seeded schedules on real redis-server (for
// concurrency) and on miniredis with its clock stopped (for exactness).
// For every key and every stretch between two resets, the units granted G
// lie in
//
//	[min(D, Cmin − (maxN−1)) − hold,  Cmax + refill + refunded + hold]
//
// where D is the units asked for, Cmin and Cmax the least and greatest
// capacity the key's limits had (a named limit's rule changes midway),
// maxN the largest request, refill what the limits refilled over the
// stretch (none on the stopped clock), and hold the units leases may hold,
// Limiters × ⌊MaxFraction × Cmax⌋ when that lease could hold 2 units and
// 0 otherwise (docs/leases.md). No call returns an error, and none is
// answered by the failure mode. Bounded: propCISchedules schedules of at
// most 120 rounds of at most 48 calls, per backend.
func TestLimiterProperties(t *testing.T) {
	n := *propSchedules
	if n == 0 {
		n = propCISchedules
	}
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = uint64(i + 1)
	}
	if *propSeed != 0 {
		seeds = []uint64{*propSeed}
	}
	backends := map[string]func(t *testing.T) propBackend{
		"redis": func(t *testing.T) propBackend {
			var b propBackend
			for _, s := range redistest.StartN(t, 3) {
				b.addrs = append(b.addrs, s.Addr())
			}
			return b
		},
		"miniredis": func(t *testing.T) propBackend {
			b := propBackend{frozen: true}
			now := time.Date(2026, 12, 4, 12, 30, 0, 0, time.UTC) // no window boundary near
			for range 3 {
				m := miniredis.RunT(t)
				m.SetTime(now)
				b.addrs = append(b.addrs, m.Addr())
			}
			return b
		},
	}
	// Each backend in both layouts: the compact one with few buckets, so
	// that the schedule's keys share hashes.
	for _, lt := range []struct {
		name string
		l    Layout
	}{{"", Layout{}}, {"/compact", Layout{Compact: true, Keys: 4 * remote.KeysPerHash}}} {
		for name, start := range backends {
			t.Run(name+lt.name, func(t *testing.T) {
				b := start(t)
				b.layout = lt.l
				propRun(t, b, name+lt.name, seeds)
			})
		}
	}
}

// propRun runs the schedules of seeds on b, named name.
func propRun(t *testing.T, b propBackend, name string, seeds []uint64) {
	start := time.Now()
	sources := map[Source]int64{}
	for _, seed := range seeds {
		s := newSchedule(seed)
		if problem := runScheduleCounting(t, b, s, sources); problem != "" {
			shrunk := shrinkSchedule(t, b, s)
			t.Fatalf("%s\nrun it again: go test -run 'TestLimiterProperties/%s' ./hybrid/ -args -prop.seed=%d\nshrunk to:\n%s", problem, name, seed, shrunk)
		}
	}
	t.Logf("%d schedules in %v; answers by source %v", len(seeds), time.Since(start).Round(time.Millisecond), sources)
	// The schedules must exercise what they check.
	if len(seeds) >= propCISchedules && (sources[SourceLease] == 0 || sources[SourceDenyCache] == 0 || sources[SourceRemote] == 0) {
		t.Errorf("answers by source %v: want some from Redis, leases and the denial cache", sources)
	}
}

// shrinkSchedule drops rounds from a failing schedule while it still fails
// (whole halves, then quarters, ...), at most propShrinkRuns runs, and
// returns the smallest that failed, with what failed.
func shrinkSchedule(t *testing.T, b propBackend, s propSchedule) string {
	best, problem := s, ""
	runs := 0
	for chunk := len(s.rounds) / 2; chunk >= 1 && runs < propShrinkRuns; chunk /= 2 {
		for i := 0; i+chunk <= len(best.rounds) && runs < propShrinkRuns; {
			cand := best
			cand.rounds = append(append([]propRound(nil), best.rounds[:i]...), best.rounds[i+chunk:]...)
			runs++
			if p := runSchedule(t, b, cand); p != "" {
				best, problem = cand, p
				continue
			}
			i += chunk
		}
	}
	if problem == "" {
		return s.String()
	}
	return problem + "\n" + best.String()
}

// runSchedule runs s on fresh Limiters over b and returns what broke a
// bound, or "".
func runSchedule(t *testing.T, b propBackend, s propSchedule) string {
	t.Helper()
	return runScheduleCounting(t, b, s, nil)
}

// runScheduleCounting is runSchedule, adding the answers by Source to
// sources (nil: not counted).
func runScheduleCounting(t *testing.T, b propBackend, s propSchedule, sources map[Source]int64) string {
	t.Helper()
	// Clients that wait for slow answers: the bounds are checked, not the
	// budget (gopher-lua in miniredis under -race takes more than the
	// 100 ms reads of remote.BoundOptions).
	var lims []*Limiter
	var clients []*redis.Client
	for range s.insts {
		var nodes []Node
		for _, a := range b.addrs {
			c := redis.NewClient(&redis.Options{Addr: a, ContextTimeoutEnabled: true, MaxRetries: -1,
				DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second, PoolTimeout: 2 * time.Second})
			clients = append(clients, c)
			nodes = append(nodes, Node{Name: a, Client: c})
		}
		lim, err := New(Config{Nodes: nodes, Timeout: 2 * time.Second, Layout: b.layout})
		if err != nil {
			t.Fatal(err)
		}
		lims = append(lims, lim)
	}
	defer func() {
		for _, l := range lims {
			if sources != nil {
				for src, n := range l.Stats().Decisions {
					sources[src] += n
				}
			}
			l.Close()
		}
		for _, c := range clients {
			c.Close()
		}
	}()
	ctx := context.Background()
	// Keys of this run: the shrinker runs a schedule again, on the same
	// nodes.
	run := fmt.Sprintf("%d", time.Now().UnixNano())
	keyOf := func(k int) string { return s.keys[k].name + ":" + run }
	epochs := make([][]*propEpoch, len(s.keys))
	cur := func(k int) *propEpoch {
		es := epochs[k]
		if len(es) == 0 {
			e := &propEpoch{start: time.Now(), capMin: math.MaxInt64}
			epochs[k] = append(es, e)
			return e
		}
		return es[len(es)-1]
	}
	var mu sync.Mutex
	var problems []string
	fail := func(format string, args ...any) {
		mu.Lock()
		problems = append(problems, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	for r, round := range s.rounds {
		if round.ops[0].kind == propReset {
			k := round.ops[0].key
			for _, l := range lims {
				for _, v := range s.keys[k].versions {
					if err := l.Reset(ctx, keyOf(k), v...); err != nil {
						fail("round %d: Reset: %v", r, err)
					}
				}
			}
			cur(k).end = time.Now()
			epochs[k] = append(epochs[k], &propEpoch{start: time.Now(), capMin: math.MaxInt64})
			continue
		}
		var wg sync.WaitGroup
		for _, op := range round.ops {
			ls := s.keys[op.key].limits(r)
			e := cur(op.key)
			mu.Lock()
			c := minCapacity(ls)
			e.capMin, e.capMax = min(e.capMin, c), max(e.capMax, c)
			e.rates = append(e.rates, ls...)
			mu.Unlock()
			wg.Go(func() {
				lim, key := lims[op.inst], keyOf(op.key)
				var res Result
				var err error
				switch op.kind {
				case propAllow:
					res, err = lim.AllowN(ctx, key, op.n, ls...)
				case propAtMost:
					res, err = lim.AllowAtMost(ctx, key, op.n, ls...)
				case propPeek:
					res, err = lim.Peek(ctx, key, ls...)
				case propRefund:
					err = lim.Refund(ctx, key, op.n, ls...)
				}
				if err != nil {
					fail("round %d: %s(%s, %d): %v", r, propKindNames[op.kind], key, op.n, err)
					return
				}
				if failureMode(res.Source) {
					fail("round %d: %s(%s, %d) answered by the failure mode: %+v", r, propKindNames[op.kind], key, op.n, res)
				}
				mu.Lock()
				defer mu.Unlock()
				switch op.kind {
				case propAllow, propAtMost:
					e.demand += op.n
					e.maxN = max(e.maxN, op.n)
					if res.Allowed {
						e.granted += res.Granted
					}
				case propRefund:
					e.refunded += op.n
				}
			})
		}
		wg.Wait()
	}
	for k := range epochs {
		if es := epochs[k]; len(es) > 0 && es[len(es)-1].end.IsZero() {
			es[len(es)-1].end = time.Now()
		}
	}
	if len(problems) > 0 {
		return fmt.Sprintf("seed %d: %s", s.seed, strings.Join(problems, "; "))
	}
	for k, es := range epochs {
		for i, e := range es {
			if e.capMax == 0 {
				continue // no call in it
			}
			hold := int64(s.insts) * propHold(e.capMax)
			refill := 0.0
			if !b.frozen {
				for _, l := range e.rates {
					refill = max(refill, propRefill(l, e.start, e.end))
				}
			}
			lo := min(e.demand, e.capMin-(e.maxN-1)) - hold
			hi := float64(e.capMax+e.refunded+hold) + refill
			if g := e.granted; g < lo || float64(g) > hi {
				return fmt.Sprintf("seed %d: key %d (%s) stretch %d: %d units granted, want within [%d, %.1f] (asked %d, capacity %d to %d, largest request %d, refunded %d, refill %.1f, leases may hold %d)",
					s.seed, k, s.keys[k].name, i, g, lo, hi, e.demand, e.capMin, e.capMax, e.maxN, e.refunded, refill, hold)
			}
		}
	}
	return ""
}

// propHold is the most one instance's lease holds of a key whose smallest
// capacity is c, at the default MaxFraction: none where the lease could
// not hold minHotBatch units (the key is not leased).
func propHold(c int64) int64 {
	h := int64(float64(c) * DefaultMaxFraction)
	if h < minHotBatch {
		return 0
	}
	return h
}

// propRefill is the most limit l gives back over [from, to] beyond its
// capacity: its rate per elapsed period, plus a rate for each boundary of
// a period of Unix time crossed (windows start afresh there).
func propRefill(l Limit, from, to time.Time) float64 {
	p := l.Period
	crossed := to.UnixNano()/int64(p) - from.UnixNano()/int64(p)
	return float64(l.Rate) * (to.Sub(from).Seconds()/p.Seconds() + float64(crossed))
}
