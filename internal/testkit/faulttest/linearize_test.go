package faulttest

// The cold path, checked by a history checker the project did not write
// (github.com/anishathalye/porcupine): three Limiters with leases off over
// three real redis-server nodes, one of them behind a fault proxy, run
// AllowN, AllowAtMost, Peek, Refund and Reset on keys that do not refill
// during the run, and every call is recorded with its call and return
// times. Each key's history must be linearizable against one counter of
// units per key (the limit's capacity, never refilled): every answer Redis
// gave, as one atomic step somewhere between its call and its return. It
// runs in both layouts (hybrid.Layout): the compact one's token buckets are
// fields of hashes that the keys share.
//
// An answer of the failure mode that says MaybeCharged is of unknown
// outcome: it took effect somewhere between its call and the latest its
// request could reach Redis (linUnknownWithin), or never. One that does not
// say so was never sent, and is not in the history: were MaybeCharged
// untrue, the history would not check. Refund
// and Reset return no answer; they are made on the keys of the healthy
// nodes, and counted of unknown outcome if a healthy node ever failed.
//
// The denial cache is not linearizable, and is not checked as such: each
// of its answers must follow a denial Redis gave the same instance for the
// same key and limits and a cost no larger, within that denial's
// RetryAfter, with no Refund or Reset of the key by the instance between
// (docs/leases.md, "The denial cache").

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	. "github.com/hybridlimit/hybridlimit/hybrid"
	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
	"github.com/hybridlimit/hybridlimit/internal/testkit/toxitest"
)

type linKind uint8

const (
	linAllow linKind = iota
	linAtMost
	linPeek
	linRefund
	linReset
)

var linKindNames = [...]string{"AllowN", "AllowAtMost", "Peek", "Refund", "Reset"}

// linIn is an operation's input: its key's index (the partition), kind and
// cost, and the key's capacity.
type linIn struct {
	key      int
	kind     linKind
	n        int64
	capacity int64
}

// linOut is what the operation answered; unknown: nothing is known of it
// (it may have run, or not).
type linOut struct {
	unknown   bool
	allowed   bool
	granted   int64
	remaining int64
}

// linSpec is a limit of capacity units that does not refill, per key:
// the state is the units left (-1: full, the capacity being the input's).
// An operation of unknown outcome may have taken effect or not: both are
// next states.
var linSpec = porcupine.NondeterministicModel{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		by := map[int][]porcupine.Operation{}
		for _, op := range h {
			k := op.Input.(linIn).key
			by[k] = append(by[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(by))
		for _, ops := range by {
			out = append(out, ops)
		}
		return out
	},
	Init: func() []any { return []any{int64(-1)} },
	Step: func(state, input, output any) []any {
		in, out := input.(linIn), output.(linOut)
		left := state.(int64)
		if left < 0 {
			left = in.capacity
		}
		next, want := linApply(in, left)
		switch {
		case out.unknown && next != left:
			return []any{left, next}
		case out.unknown:
			return []any{left}
		case in.kind == linRefund || in.kind == linReset || out == want:
			return []any{next}
		}
		return nil
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(linIn), output.(linOut)
		if out.unknown {
			return fmt.Sprintf("%s(%d) -> ?", linKindNames[in.kind], in.n)
		}
		return fmt.Sprintf("%s(%d) -> allowed %v, granted %d, remaining %d", linKindNames[in.kind], in.n, out.allowed, out.granted, out.remaining)
	},
}

var linModel = linSpec.ToModel()

// linApply is what operation in does to a limit with left units, and the
// answer it gives.
func linApply(in linIn, left int64) (next int64, out linOut) {
	switch in.kind {
	case linAllow:
		if left >= in.n {
			return left - in.n, linOut{allowed: true, granted: in.n, remaining: left - in.n}
		}
		return left, linOut{remaining: left}
	case linAtMost:
		g := min(in.n, left)
		return left - g, linOut{allowed: g > 0, granted: g, remaining: left - g}
	case linPeek:
		return left, linOut{allowed: left >= 1, remaining: max(left-1, 0)}
	case linRefund:
		return min(in.capacity, left+in.n), linOut{}
	}
	return in.capacity, linOut{} // linReset
}

// linUnknownWithin bounds how long after its call a request of unknown
// outcome can take effect on Redis: its budget (the Timeout), plus the
// longest the proxy holds a request (Timeout + 60 ms), with room to
// spare for a machine that stalls (2 cores, -race). After it, it has run
// or never will.
const linUnknownWithin = time.Second

// linDenial is a denial Redis gave an instance: the deny-cache answers
// that follow must match one.
type linDenial struct {
	inst, key int
	n         int64
	call      time.Duration // when it was asked for: the cache may answer from then
	until     time.Duration // its return + its RetryAfter
}

func TestColdPathLinearizable(t *testing.T) {
	for _, l := range []Layout{{}, {Compact: true, Keys: 1000}} {
		t.Run(fmt.Sprintf("compact=%v", l.Compact), func(t *testing.T) { coldPathLinearizable(t, l) })
	}
}

// coldPathLinearizable is TestColdPathLinearizable in layout l: the
// compact one keeps the token buckets' states as fields of shared hashes,
// the logs' as sorted sets of their own.
func coldPathLinearizable(t *testing.T, l Layout) {
	const (
		insts, workers = 3, 4
		timeout        = 80 * time.Millisecond
		run            = 3 * time.Second
		maxOps         = 1500 // per worker
	)
	srv := redistest.StartN(t, 3)
	sick := toxitest.New(t, srv[0].Addr())
	addrs := []string{sick.Addr(), srv[1].Addr(), srv[2].Addr()}
	lims := make([]*Limiter, insts)
	for i := range lims {
		lim, err := New(Config{Addrs: addrs, Layout: l, Timeout: timeout, Lease: LeaseConfig{Disable: true}, Logger: slog.New(slog.DiscardHandler),
			// A breaker slow to open: most requests of a fault are sent,
			// and of unknown outcome, rather than answered unsent.
			Breaker: BreakerConfig{ConsecutiveFailures: 1000, FailureRatio: 1, OpenTimeout: 150 * time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { lim.Close() })
		lims[i] = lim
	}
	// Keys on every node, with limits that do not refill in a day.
	type linKey struct {
		name    string
		limit   Limit
		healthy bool // on a node without faults: Refund and Reset go there
	}
	var keys []linKey
	per := map[string]int{}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; len(keys) < 12; i++ {
		name := "lin:" + strconv.Itoa(i)
		node := lims[0].NodeOf(name)
		if per[node] == 4 {
			continue
		}
		per[node]++
		alg := TokenBucket
		if i%3 == 2 {
			alg = SlidingWindowLog
		}
		keys = append(keys, linKey{name: name, limit: Limit{Algorithm: alg, Rate: 500 + rng.Int64N(1000), Period: 24 * time.Hour}, healthy: node != sick.Addr()})
	}

	// Faults on the sick node, one after the other: replies late past the
	// Timeout (the scripts ran), reset connections, requests held past it.
	stop := make(chan struct{})
	var faults sync.WaitGroup
	faults.Go(func() {
		kinds := []func() string{
			func() string {
				return sick.Latency(t, toxitest.Downstream, timeout+40*time.Millisecond, 20*time.Millisecond)
			},
			func() string {
				return sick.Add(t, "reset_peer", toxitest.Downstream, map[string]any{"timeout": 0})
			},
			func() string {
				return sick.Latency(t, toxitest.Upstream, timeout+40*time.Millisecond, 20*time.Millisecond)
			},
		}
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			name := kinds[i%len(kinds)]()
			select {
			case <-stop:
			case <-time.After(250 * time.Millisecond):
			}
			sick.Remove(t, name)
		}
	})

	start := time.Now()
	since := func() int64 { return int64(time.Since(start)) }
	var mu sync.Mutex
	var history []porcupine.Operation
	var cached []porcupine.Operation // deny-cache answers, checked apart
	var wg sync.WaitGroup
	for i := range insts {
		for w := range workers {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(i), uint64(w)))
				ctx := context.Background()
				for range maxOps {
					if time.Since(start) > run {
						return
					}
					k := rng.IntN(len(keys))
					key := keys[k]
					in := linIn{key: k, n: 1 + rng.Int64N(3), capacity: key.limit.Capacity()}
					switch x := rng.IntN(40); {
					case x < 25:
						in.kind = linAllow
					case x < 31:
						in.kind = linAtMost
					case x < 36:
						in.kind = linPeek
					case x < 39:
						in.kind = linRefund
					default:
						in.kind = linReset
					}
					if (in.kind == linRefund || in.kind == linReset) && !key.healthy {
						in.kind = linAllow
					}
					op := porcupine.Operation{ClientId: i*workers + w, Input: in, Call: since()}
					var r Result
					var err error
					switch in.kind {
					case linAllow:
						r, err = lims[i].AllowN(ctx, key.name, in.n, key.limit)
					case linAtMost:
						r, err = lims[i].AllowAtMost(ctx, key.name, in.n, key.limit)
					case linPeek:
						r, err = lims[i].Peek(ctx, key.name, key.limit)
					case linRefund:
						err = lims[i].Refund(ctx, key.name, in.n, key.limit)
					case linReset:
						err = lims[i].Reset(ctx, key.name, key.limit)
					}
					op.Return = since()
					if err != nil {
						t.Errorf("%s %s: %v", linKindNames[in.kind], key.name, err)
						return
					}
					op.Output = linOut{allowed: r.Allowed, granted: r.Granted, remaining: r.Remaining}
					op.Metadata = r
					switch {
					case in.kind == linRefund || in.kind == linReset:
					case r.Source == SourceDenyCache:
						mu.Lock()
						cached = append(cached, op)
						mu.Unlock()
						continue
					case r.Source != SourceRemote && !r.MaybeCharged:
						continue // never sent: not in the history
					case r.Source != SourceRemote:
						op.Output, op.Return = linOut{unknown: true}, op.Call+int64(linUnknownWithin)
					}
					mu.Lock()
					history = append(history, op)
					mu.Unlock()
					time.Sleep(time.Millisecond)
				}
			})
		}
	}
	wg.Wait()
	close(stop)
	faults.Wait()

	// Refund and Reset say nothing of their outcome: if a healthy node
	// failed an instance's request, they are of unknown outcome there.
	healthyFailed := false
	for _, lim := range lims {
		for _, ns := range lim.Stats().Nodes {
			if ns.Name == sick.Addr() {
				continue
			}
			for _, c := range ns.Undecided {
				healthyFailed = healthyFailed || c > 0
			}
		}
	}
	var unknown, remote int
	for i, op := range history {
		in := op.Input.(linIn)
		if (in.kind == linRefund || in.kind == linReset) && healthyFailed {
			history[i].Output, history[i].Return = linOut{unknown: true}, history[i].Call+int64(linUnknownWithin)
		}
		if history[i].Output.(linOut).unknown {
			unknown++
		} else {
			remote++
		}
	}

	t0 := time.Now()
	res, info := porcupine.CheckOperationsVerbose(linModel, history, 60*time.Second)
	t.Logf("%d operations in the history (%d answered, %d of unknown outcome), %d deny-cache answers; a healthy node failed: %v; %v, checked in %v",
		len(history), remote, unknown, len(cached), healthyFailed, res, time.Since(t0).Round(time.Millisecond))
	switch res {
	case porcupine.Illegal:
		path := t.TempDir() + "/history.html"
		if err := porcupine.VisualizePath(linModel, info, path); err == nil {
			t.Logf("the history, drawn: %s", path)
		}
		t.Fatal("the history is not linearizable")
	case porcupine.Unknown:
		t.Fatal("the checker ran out of time")
	}
	if unknown == 0 {
		t.Error("no operation of unknown outcome: the faults hit nothing")
	}
	checkDenyCache(t, workers, history, cached)
}

// checkDenyCache checks each deny-cache answer against its contract: a
// denial Redis gave the same instance for the same key, of a cost no
// larger, asked for before the answer was (it is remembered before its
// call returns) and whose RetryAfter had not passed, with no Refund or Reset of the key by that instance
// between the two.
func checkDenyCache(t *testing.T, workers int, history, cached []porcupine.Operation) {
	t.Helper()
	var denials []linDenial
	type change struct {
		inst, key int
		call      int64
	}
	var changes []change
	for _, op := range history {
		in, out := op.Input.(linIn), op.Output.(linOut)
		inst := op.ClientId / workers
		switch {
		case in.kind == linRefund || in.kind == linReset:
			changes = append(changes, change{inst, in.key, op.Call})
		case !out.unknown && !out.allowed:
			n := in.n
			if in.kind != linAllow {
				n = 1 // AllowAtMost and Peek remember a denial of one unit
			}
			r := op.Metadata.(Result)
			denials = append(denials, linDenial{inst: inst, key: in.key, n: n, call: time.Duration(op.Call), until: time.Duration(op.Return) + r.RetryAfter})
		}
	}
	for _, op := range cached {
		in, inst := op.Input.(linIn), op.ClientId/workers
		call := time.Duration(op.Call)
		ok := false
		for _, d := range denials {
			if d.inst != inst || d.key != in.key || d.n > in.n || d.call > call || call >= d.until {
				continue
			}
			between := false
			for _, c := range changes {
				between = between || c.inst == inst && c.key == in.key && time.Duration(c.call) > d.call && time.Duration(c.call) < call
			}
			if !between {
				ok = true
				break
			}
		}
		if !ok {
			t.Errorf("instance %d: the denial cache answered %s at %v with no denial of Redis's to match", inst, linModel.DescribeOperation(in, op.Output), call)
		}
	}
}
