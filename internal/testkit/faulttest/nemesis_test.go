package faulttest

// The nemesis soak of leases: 2-4 Limiters with leases on share 3 real
// redis-server nodes, each Limiter through proxies of its own, while faults
// timed to hit lease batches, give-backs, TTL expiry and Close come and go
// on the wire, and one instance may crash (its connections cut, its callers
// gone, Close never reached while the others run). Each schedule comes from
// a seed. At the end every unit of every key is accounted for:
//
//   - admitted (answers from Redis and from leases) <= capacity, plus the
//     refill and the refunds of a key that refills;
//   - for a key that does not refill during the run (a quota), after
//     every Limiter has closed, the units Redis is short of (capacity -
//     what it holds - admitted) lie between the units the Limiters counted
//     lost for the key and that plus the units of unknown outcome they
//     counted and the units of the requests answered MaybeCharged: no unit
//     created, none lost without a count; with nothing of unknown outcome,
//     exactly the units counted lost;
//   - what one failed batch or give-back lost is at most a lease's ceiling
//     (⌊MaxFraction · capacity⌋), and what a crash stranded of a key at
//     most what docs/leases.md states.
//
// The units lost and of unknown outcome are attributed to keys by the
// Limiters' own debug log lines (the key is in each), and their sums are
// checked against Stats.
//
//	go test -run TestLeaseNemesis ./internal/testkit/faulttest/                            # CI: nemesisCISeeds schedules
//	go test -run TestLeaseNemesis ./internal/testkit/faulttest/ -args -nemesis.seeds=200     # a hunt
//	go test -run TestLeaseNemesis ./internal/testkit/faulttest/ -args -nemesis.seed=42       # one schedule again
//	go test -run TestLeaseNemesis ./internal/testkit/faulttest/ -args -nemesis.seed=42 -nemesis.keep=0,crash  # its shrunk form

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	. "github.com/hybridlimit/hybridlimit/hybrid"
	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
	"github.com/hybridlimit/hybridlimit/internal/testkit/toxitest"
	"github.com/hybridlimit/hybridlimit/remote"
)

var (
	nemesisSeeds = flag.Int("nemesis.seeds", 0, "TestLeaseNemesis: schedules to run (0: nemesisCISeeds)")
	nemesisSeed  = flag.Uint64("nemesis.seed", 0, "TestLeaseNemesis: run only the schedule of this seed")
	nemesisKeep  = flag.String("nemesis.keep", "", "TestLeaseNemesis, with -nemesis.seed: keep only these faults (indices, and crash), as a shrunk schedule prints them")
)

// nemesisCISeeds is how many schedules CI runs: each takes about 2 s on 2
// cores under -race (its run of 1.2-2 s, then the Closes): 11 s in all.
const nemesisCISeeds = 6

// nemesisShrinkRuns bounds how many times a failing schedule is run again
// while it is shrunk.
const nemesisShrinkRuns = 12

// nemesisNodes is the number of redis-server nodes.
const nemesisNodes = 3

type faultKind int

const (
	// faultLate holds the node's replies for longer than Timeout: the
	// scripts run, and their replies come after their callers gave up.
	faultLate faultKind = iota
	// faultDrop swallows the node's replies (toxiproxy's timeout toxic):
	// the scripts run, and no reply comes.
	faultDrop
	// faultReset resets the connections as data arrives from the node.
	faultReset
	// faultSlowSend holds the requests on their way to the node for
	// longer than Timeout: they run after their callers gave up.
	faultSlowSend
	// faultPause stops the node's process (SIGSTOP) for the fault's
	// duration: every instance's requests to it wait, and run on resume.
	faultPause
	// faultSlow holds the node's replies for half the Timeout: a slow node,
	// not a failed one. Batches land late, leases run dry and expire
	// while their renewals are in flight.
	faultSlow
	numFaultKinds
)

var faultNames = [...]string{"late-reply", "dropped-reply", "reset", "slow-send", "pause", "slow"}

func (k faultKind) String() string { return faultNames[k] }

// nemFault is one fault of a schedule: on node's connections from
// instance inst (-1: every instance's), from at to at+dur after the start.
// A fault that outlasts the run is still on while the Limiters close.
type nemFault struct {
	kind    faultKind
	node    int
	inst    int
	at, dur time.Duration
}

func (f nemFault) String() string {
	who := "every instance"
	if f.inst >= 0 {
		who = "instance " + strconv.Itoa(f.inst)
	}
	return fmt.Sprintf("%v on node %d from %v for %v (%s)", f.kind, f.node, f.at, f.dur, who)
}

// nemKey is a key of a schedule and its limits. A quota key does not
// refill during the run (a month's period): every unit it lost is counted.
type nemKey struct {
	limits []Limit
	quota  bool
}

type nemSchedule struct {
	seed    uint64
	insts   int
	timeout time.Duration
	lease   LeaseConfig
	keys    []nemKey
	run     time.Duration
	faults  []nemFault
	// crash is when the last instance crashes; 0: none does.
	crash time.Duration
}

// newNemesis draws a schedule from seed.
func newNemesis(seed uint64) nemSchedule {
	rng := rand.New(rand.NewPCG(seed, 0x6a09e667f3bcc909))
	s := nemSchedule{
		seed:    seed,
		insts:   2 + rng.IntN(3),
		timeout: time.Duration(40+rng.IntN(40)) * time.Millisecond,
		run:     time.Duration(1200+rng.IntN(800)) * time.Millisecond,
	}
	// Leases that keys take quickly, hold several units, renew often and
	// expire within the run.
	s.lease = LeaseConfig{
		HotRate:     20,
		WarmRate:    5,
		MaxFraction: 0.04 + 0.06*rng.Float64(),
		RenewEvery:  time.Duration(15+rng.IntN(35)) * time.Millisecond,
		TTL:         time.Duration(50+rng.IntN(450)) * time.Millisecond,
	}
	// A quota's period: its largest (60,000) refills a unit in 43 s, none
	// during a run.
	const month = 30 * 24 * time.Hour
	for range 4 + rng.IntN(4) {
		var k nemKey
		// Quotas of a few thousand run out within the run (leases then
		// wait, dry); larger ones do not (leases hold units to the end).
		switch rng.IntN(5) {
		case 0:
			k = nemKey{quota: true, limits: []Limit{{Rate: 300 + rng.Int64N(2700), Period: month}}}
		case 1:
			k = nemKey{quota: true, limits: []Limit{{Rate: 20_000 + rng.Int64N(40_000), Period: month}}}
		case 2:
			k = nemKey{quota: true, limits: []Limit{{Algorithm: SlidingWindowLog, Rate: 300 + rng.Int64N(1200), Period: month}}}
		case 3:
			c := 300 + rng.Int64N(1700)
			if rng.IntN(2) == 0 {
				c *= 20
			}
			k = nemKey{quota: true, limits: []Limit{{Rate: c, Period: month}, {Rate: c + rng.Int64N(c), Period: 2 * month}}}
		default:
			k = nemKey{limits: []Limit{{Rate: 200 + rng.Int64N(600), Period: time.Second}}}
		}
		s.keys = append(s.keys, k)
	}
	for range rng.IntN(6) {
		f := nemFault{
			kind: faultKind(rng.IntN(int(numFaultKinds))),
			node: rng.IntN(nemesisNodes),
			inst: -1,
			at:   time.Duration(rng.Int64N(int64(s.run))),
			dur:  time.Duration(30+rng.IntN(300)) * time.Millisecond,
		}
		if f.kind != faultPause && rng.IntN(3) == 0 {
			f.inst = rng.IntN(s.insts)
		}
		s.faults = append(s.faults, f)
	}
	if rng.IntN(3) == 0 {
		// One more, on while the Limiters close: their give-backs meet it.
		s.faults = append(s.faults, nemFault{kind: []faultKind{faultLate, faultDrop, faultReset, faultSlowSend, faultSlow}[rng.IntN(5)], node: rng.IntN(nemesisNodes), inst: -1,
			at: s.run - 20*time.Millisecond, dur: time.Second})
	}
	if rng.IntN(2) == 0 {
		s.crash = s.run/4 + time.Duration(rng.Int64N(int64(s.run/2)))
	}
	return s
}

func (s nemSchedule) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d: %d instances, Timeout %v, run %v, lease %+v\n", s.seed, s.insts, s.timeout, s.run, s.lease)
	for i, k := range s.keys {
		fmt.Fprintf(&b, "  key %d: %v quota=%v\n", i, k.limits, k.quota)
	}
	for i, f := range s.faults {
		fmt.Fprintf(&b, "  fault %d: %v\n", i, f)
	}
	if s.crash > 0 {
		fmt.Fprintf(&b, "  crash: instance %d at %v\n", s.insts-1, s.crash)
	}
	return b.String()
}

// keep returns s with only the faults of the given indices, and the crash
// if crash is set.
func (s nemSchedule) keep(faults []int, crash bool) nemSchedule {
	out := s
	out.faults = nil
	for _, i := range faults {
		out.faults = append(out.faults, s.faults[i])
	}
	if !crash {
		out.crash = 0
	}
	return out
}

// nemRecord is one of a Limiter's log lines about lease units: a batch of
// unknown outcome, or a give-back that failed (lost, or of unknown
// outcome), with when it was logged.
type nemRecord struct {
	inst    int
	key     string
	units   int64
	unknown bool
	at      time.Duration
}

// nemLog is a slog.Handler that keeps the lease-unit lines of every
// instance.
type nemLog struct {
	inst  int
	start time.Time
	mu    *sync.Mutex
	recs  *[]nemRecord
}

func (h nemLog) Enabled(context.Context, slog.Level) bool { return true }
func (h nemLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h nemLog) WithGroup(string) slog.Handler            { return h }

func (h nemLog) Handle(_ context.Context, r slog.Record) error {
	rec := nemRecord{inst: h.inst, at: time.Since(h.start)}
	switch r.Message {
	case "hybrid: lease batch of unknown outcome":
		rec.unknown = true
	case "hybrid: give-back failed":
		rec.unknown = true // until "lost" says otherwise
	case "hybrid: lease units dropped, their node left the ring":
	default:
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "key":
			rec.key = a.Value.String()
		case "units":
			rec.units = a.Value.Int64()
		case "lost":
			rec.unknown = !a.Value.Bool()
		}
		return true
	})
	h.mu.Lock()
	*h.recs = append(*h.recs, rec)
	h.mu.Unlock()
	return nil
}

// nemTally is what the callers saw of one key.
type nemTally struct {
	admitted atomic.Int64 // units granted by Redis or a lease
	maybe    atomic.Int64 // units of requests answered MaybeCharged
	refunded atomic.Int64 // units given back with Refund
	ops      atomic.Int64
}

// nemOutcome is what one run found.
type nemOutcome struct {
	problems []string
	ops      int64
	recs     []nemRecord
	// lostBy and unknownBy are the units counted lost and of unknown
	// outcome, by what was going on when they were logged: a fault's
	// kind, "crash", "close" or "none".
	lostBy, unknownBy map[string]int64
	maybe             int64
}

func (o *nemOutcome) errorf(format string, args ...any) {
	o.problems = append(o.problems, fmt.Sprintf(format, args...))
}

// nemRun counts runs, so that each uses keys of its own.
var nemRun atomic.Int64

// runNemesis runs schedule s on the servers srv and checks what it left.
func runNemesis(t *testing.T, srv []*redistest.Server, s nemSchedule) *nemOutcome {
	t.Helper()
	run := nemRun.Add(1)
	keyName := func(i int) string { return fmt.Sprintf("nem:%d:%d:k%d", s.seed, run, i) }
	start := time.Now()
	var mu sync.Mutex
	var recs []nemRecord

	// Each instance reaches each node through a proxy of its own, under
	// the node's name: the ring routes a key to the same node from every
	// instance, and one instance's connections can be cut alone.
	px := make([][]*toxitest.Proxy, s.insts)
	lims := make([]*Limiter, s.insts)
	var clients []*redis.Client
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	for i := range s.insts {
		var nodes []Node
		for n := range nemesisNodes {
			p, err := toxitest.Start(srv[n].Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer p.Stop()
			px[i] = append(px[i], p)
			c := remote.NewClient(&redis.Options{Addr: p.Addr()})
			clients = append(clients, c)
			nodes = append(nodes, Node{Name: "n" + strconv.Itoa(n), Client: c})
		}
		lim, err := New(Config{Nodes: nodes, Timeout: s.timeout, Lease: s.lease,
			Breaker: BreakerConfig{OpenTimeout: 150 * time.Millisecond},
			Logger:  slog.New(nemLog{inst: i, start: start, mu: &mu, recs: &recs})})
		if err != nil {
			t.Fatal(err)
		}
		lims[i] = lim
	}
	closed := make([]bool, s.insts)
	defer func() {
		for i, l := range lims {
			if !closed[i] {
				l.Close()
			}
		}
	}()

	// The faults, on a timeline of their own.
	var paused sync.Map // node index -> true while its server is stopped
	apply := func(f nemFault) (undo func()) {
		if f.kind == faultPause {
			if err := srv[f.node].Pause(); err != nil {
				t.Error(err)
				return func() {}
			}
			paused.Store(f.node, true)
			return func() {
				paused.Delete(f.node)
				if err := srv[f.node].Resume(); err != nil {
					t.Error(err)
				}
			}
		}
		var names []func()
		for i := range s.insts {
			if f.inst >= 0 && i != f.inst {
				continue
			}
			p := px[i][f.node]
			var name string
			var err error
			switch f.kind {
			case faultLate:
				name, err = p.AddLatency(toxitest.Downstream, s.timeout+20*time.Millisecond, 10*time.Millisecond)
			case faultDrop:
				name, err = p.AddToxic("timeout", toxitest.Downstream, map[string]any{"timeout": 0})
			case faultReset:
				name, err = p.AddToxic("reset_peer", toxitest.Downstream, map[string]any{"timeout": 0})
			case faultSlowSend:
				name, err = p.AddLatency(toxitest.Upstream, s.timeout+20*time.Millisecond, 10*time.Millisecond)
			case faultSlow:
				name, err = p.AddLatency(toxitest.Downstream, s.timeout/2, 0)
			}
			if err != nil {
				t.Error(err)
				continue
			}
			names = append(names, func() { p.RemoveToxic(name) })
		}
		return func() {
			for _, f := range names {
				f()
			}
		}
	}
	type window struct {
		what     string
		from, to time.Duration
	}
	var windows []window // when each fault was on, plus a Timeout after
	var undos []func()
	var tl sync.WaitGroup
	stopTimeline := make(chan struct{})
	var undoMu sync.Mutex
	for _, f := range s.faults {
		windows = append(windows, window{f.kind.String(), f.at, f.at + f.dur + 2*s.timeout})
		tl.Go(func() {
			select {
			case <-time.After(f.at):
			case <-stopTimeline:
				return
			}
			undo := apply(f)
			undoMu.Lock()
			undos = append(undos, undo)
			i := len(undos) - 1
			undoMu.Unlock()
			select {
			case <-time.After(f.dur):
			case <-stopTimeline:
				return // undone after the Closes
			}
			undoMu.Lock()
			undos[i] = func() {}
			undoMu.Unlock()
			undo()
		})
	}
	undoAll := func() {
		close(stopTimeline)
		tl.Wait()
		undoMu.Lock()
		for _, u := range undos {
			u()
		}
		undoMu.Unlock()
	}

	// The callers: three per instance, bounded in operations and time.
	// They run until their Limiter is closed: Close meets requests still
	// being spent from its leases, as a service's shutdown does.
	tallies := make([]nemTally, len(s.keys))
	const workers, maxOps = 3, 6000
	end := start.Add(s.run)
	crashed := s.insts // none
	var gone atomic.Bool
	var wg sync.WaitGroup
	for i := range s.insts {
		for w := range workers {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(s.seed, uint64(run)<<8|uint64(i*workers+w)))
				ctx := context.Background()
				for range maxOps {
					if time.Now().After(end.Add(5*time.Second)) || i == s.insts-1 && gone.Load() {
						return
					}
					k := rng.IntN(len(s.keys))
					if rng.IntN(2) == 0 {
						k = rng.IntN(2) // the hot keys
					}
					key, tk := s.keys[k], &tallies[k]
					tk.ops.Add(1)
					var r Result
					var err error
					var n int64
					switch x := rng.IntN(20); {
					case x < 14:
						n = 1 + rng.Int64N(5)
						r, err = lims[i].AllowN(ctx, keyName(k), n, key.limits...)
					case x < 17:
						n = 1 + rng.Int64N(5)
						r, err = lims[i].AllowAtMost(ctx, keyName(k), n, key.limits...)
					case x < 19:
						_, err = lims[i].Peek(ctx, keyName(k), key.limits...)
					default:
						if key.quota {
							continue // a quota key's refunds could not be told from its losses
						}
						n := 1 + rng.Int64N(2)
						if err = lims[i].Refund(ctx, keyName(k), n, key.limits...); err == nil {
							tk.refunded.Add(n)
						}
					}
					if errors.Is(err, ErrClosed) {
						return
					}
					if err != nil {
						t.Errorf("instance %d, key %d: %v", i, k, err)
						return
					}
					if r.Allowed && (r.Source == SourceRemote || r.Source == SourceLease) {
						tk.admitted.Add(r.Granted)
					}
					if r.MaybeCharged {
						tk.maybe.Add(n)
					}
					time.Sleep(300 * time.Microsecond)
				}
			})
		}
	}
	if s.crash > 0 {
		crashed = s.insts - 1
		windows = append(windows, window{"crash", s.crash, time.Hour})
		time.Sleep(time.Until(start.Add(s.crash)))
		for _, p := range px[crashed] {
			p.Disable() // its connections cut, and no new one accepted
		}
		gone.Store(true)
	}
	time.Sleep(time.Until(end))
	closeAt := time.Since(start)
	windows = append(windows, window{"close", closeAt, time.Hour})
	for i, l := range lims {
		if i != crashed {
			l.Close()
			closed[i] = true
		}
	}
	wg.Wait()
	undoAll()
	// The crashed instance never gave anything back: Close it now, with
	// its connections still cut, so that its goroutines end (its give-
	// backs reach nobody; its counters say what it stranded).
	if crashed < s.insts {
		lims[crashed].Close()
		closed[crashed] = true
	}
	paused.Range(func(k, _ any) bool {
		t.Errorf("node %v still paused", k)
		return true
	})

	o := &nemOutcome{recs: recs, lostBy: map[string]int64{}, unknownBy: map[string]int64{}}
	var statLost, statUnknown int64
	for _, l := range lims {
		st := l.Stats()
		statLost += st.LeaseUnitsLost
		statUnknown += st.LeaseUnitsUnknown
	}
	lostOf, unknownOf := map[string]int64{}, map[string]int64{}
	crashOf := map[string]int64{}
	var recLost, recUnknown int64
	for _, r := range recs {
		// What was going on: the crash for the crashed instance after
		// it, else the first fault whose window holds the line, else
		// Close.
		what := "none"
		for _, w := range windows {
			if r.at >= w.from && r.at < w.to && (w.what != "crash" || r.inst == crashed) {
				what = w.what
				break
			}
		}
		if r.inst == crashed && r.at >= s.crash {
			what = "crash"
			crashOf[r.key] += r.units
		}
		if r.unknown {
			unknownOf[r.key] += r.units
			recUnknown += r.units
			o.unknownBy[what] += r.units
		} else {
			lostOf[r.key] += r.units
			recLost += r.units
			o.lostBy[what] += r.units
		}
	}
	if recLost != statLost || recUnknown != statUnknown {
		o.errorf("log lines count %d units lost and %d of unknown outcome; Stats %d and %d", recLost, recUnknown, statLost, statUnknown)
	}

	// What Redis holds, read on the nodes themselves under the same names.
	var direct []Node
	for n := range nemesisNodes {
		c := remote.NewClient(&redis.Options{Addr: srv[n].Addr()})
		clients = append(clients, c)
		direct = append(direct, Node{Name: "n" + strconv.Itoa(n), Client: c})
	}
	reader, err := New(Config{Nodes: direct, Timeout: 2 * time.Second, Lease: LeaseConfig{Disable: true}, DenyCache: DenyCacheConfig{Disable: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	elapsed := time.Since(start)
	for k, key := range s.keys {
		name, tk := keyName(k), &tallies[k]
		o.ops += tk.ops.Load()
		o.maybe += tk.maybe.Load()
		admitted, maybe := tk.admitted.Load(), tk.maybe.Load()
		ceiling := int64(float64(minCapacity(key.limits)) * s.lease.MaxFraction)
		for _, r := range recs {
			if r.key == name && r.units > ceiling {
				o.errorf("key %d: instance %d logged %d units in one batch or give-back, above a lease's ceiling %d", k, r.inst, r.units, ceiling)
			}
		}
		if c := crashOf[name]; c > 2*ceiling {
			o.errorf("key %d: the crash stranded %d units, above twice a lease's ceiling %d", k, c, ceiling)
		}
		for j, lim := range key.limits {
			held := unitsHeld(t, reader, name, lim)
			if !key.quota {
				refill := int64(float64(lim.Rate)*elapsed.Seconds()/lim.Period.Seconds()) + 1
				if admitted > lim.Capacity()+refill+tk.refunded.Load() {
					o.errorf("key %d: admitted %d, above capacity %d + refill %d + refunded %d", k, admitted, lim.Capacity(), refill, tk.refunded.Load())
				}
				continue
			}
			if admitted > lim.Capacity() {
				o.errorf("key %d, limit %d: admitted %d, above its capacity %d", k, j, admitted, lim.Capacity())
			}
			short := lim.Capacity() - held - admitted
			lost, unknown := lostOf[name], unknownOf[name]
			if short < lost || short > lost+unknown+maybe {
				o.errorf("key %d, limit %d: Redis is %d units short (capacity %d, holds %d, admitted %d); counted lost %d, unknown %d, requests MaybeCharged %d units",
					k, j, short, lim.Capacity(), held, admitted, lost, unknown, maybe)
			}
			if unknown == 0 && maybe == 0 && short != lost {
				o.errorf("key %d, limit %d: nothing of unknown outcome, and Redis is %d units short, not the %d counted lost", k, j, short, lost)
			}
		}
	}
	return o
}

// unitsHeld is what Redis holds of lim for key, as reader's Peek answers
// (it answers for one unit more).
func unitsHeld(t *testing.T, reader *Limiter, key string, lim Limit) int64 {
	t.Helper()
	r, err := reader.Peek(context.Background(), key, lim)
	if err != nil || r.Source != SourceRemote {
		t.Fatalf("Peek(%q) = %+v, %v; want Redis's answer", key, r, err)
	}
	if !r.Allowed {
		return 0
	}
	return r.Remaining + 1
}

// minCapacity is the smallest capacity of limits.
func minCapacity(limits []Limit) int64 {
	c := limits[0].Capacity()
	for _, l := range limits[1:] {
		c = min(c, l.Capacity())
	}
	return c
}

func TestLeaseNemesis(t *testing.T) {
	srv := redistest.StartN(t, nemesisNodes)
	seeds := make([]uint64, 0, nemesisCISeeds)
	switch {
	case *nemesisSeed != 0:
		seeds = append(seeds, *nemesisSeed)
	default:
		n := nemesisCISeeds
		if *nemesisSeeds > 0 {
			n = *nemesisSeeds
		}
		for i := range n {
			seeds = append(seeds, 1+uint64(i))
		}
	}
	var ops, maybe int64
	lost, unknown := map[string]int64{}, map[string]int64{}
	faults := map[string]int{}
	for _, seed := range seeds {
		s := newNemesis(seed)
		if *nemesisSeed != 0 && *nemesisKeep != "" {
			s = keepFlag(t, s, *nemesisKeep)
		}
		for _, f := range s.faults {
			faults[f.kind.String()]++
		}
		if s.crash > 0 {
			faults["crash"]++
		}
		o := runNemesis(t, srv, s)
		ops += o.ops
		maybe += o.maybe
		for k, v := range o.lostBy {
			lost[k] += v
		}
		for k, v := range o.unknownBy {
			unknown[k] += v
		}
		if len(o.problems) == 0 {
			continue
		}
		t.Errorf("%s%s", s, strings.Join(o.problems, "\n"))
		shrunk, keep := shrinkNemesis(t, srv, s)
		t.Fatalf("seed %d fails; shrunk to:\n%s\nreplay: go test -run TestLeaseNemesis ./internal/testkit/faulttest/ -args -nemesis.seed=%d -nemesis.keep=%s",
			seed, shrunk, seed, keep)
	}
	t.Logf("%d schedules, %d operations; faults injected %v; units lost by what was going on %v; of unknown outcome %v; units of requests answered MaybeCharged %d",
		len(seeds), ops, faults, lost, unknown, maybe)
}

// keepFlag applies -nemesis.keep to s.
func keepFlag(t *testing.T, s nemSchedule, keep string) nemSchedule {
	var idx []int
	crash := false
	for _, f := range strings.Split(keep, ",") {
		if f == "crash" || f == "none" {
			crash = crash || f == "crash"
			continue
		}
		i, err := strconv.Atoi(f)
		if err != nil || i < 0 || i >= len(s.faults) {
			t.Fatalf("-nemesis.keep: %q is not a fault of seed %d", f, s.seed)
		}
		idx = append(idx, i)
	}
	return s.keep(idx, crash)
}

// shrinkNemesis drops the faults (and the crash) of a failing schedule one
// at a time while it still fails, within nemesisShrinkRuns runs, and
// returns what is left and its -nemesis.keep.
func shrinkNemesis(t *testing.T, srv []*redistest.Server, s nemSchedule) (nemSchedule, string) {
	keep := make([]int, len(s.faults))
	for i := range keep {
		keep[i] = i
	}
	crash := s.crash > 0
	runs := 0
	fails := func(idx []int, crash bool) bool {
		runs++
		return len(runNemesis(t, srv, s.keep(idx, crash)).problems) > 0
	}
	if crash && runs < nemesisShrinkRuns && fails(keep, false) {
		crash = false
	}
	for i := 0; i < len(keep) && runs < nemesisShrinkRuns; {
		try := slices.Delete(slices.Clone(keep), i, i+1)
		if fails(try, crash) {
			keep = try
			continue
		}
		i++
	}
	var words []string
	for _, i := range keep {
		words = append(words, strconv.Itoa(i))
	}
	if crash {
		words = append(words, "crash")
	}
	if len(words) == 0 {
		words = append(words, "none")
	}
	return s.keep(keep, crash), strings.Join(words, ",")
}
