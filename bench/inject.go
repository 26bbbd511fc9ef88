package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hybridlimit/hybridlimit/hybrid"
	"github.com/hybridlimit/hybridlimit/internal/testkit/toxitest"
)

// -fault slow and flap act on the path to the victim, through a
// toxiproxy run in process (internal/testkit/toxitest) that every instance's
// clients for that node dial from the start; kill, pause and restart act
// on the node itself.
const (
	// slowFraction of the Limiter's Timeout is the delay -fault slow adds
	// to each reply of the victim, ± slowJitter of it. bench leaves
	// Config.Timeout at its default, hybrid.DefaultTimeout.
	slowFraction = 0.5
	slowJitter   = 0.2
	// -fault flap takes the path down and up, each state lasting a time
	// drawn uniformly from [flapMin, flapMax].
	flapMin = 100 * time.Millisecond
	flapMax = 300 * time.Millisecond
	// faultSeed seeds the flap schedule, so that every run draws the
	// same. (toxiproxy draws the jitter of slow from its own source.)
	faultSeed = 10
)

// viaProxy reports whether the fault needs the proxy in front of the
// victim.
func viaProxy(fault string) bool { return fault == "slow" || fault == "flap" }

// slowDelay is the mean delay -fault slow adds to each reply.
func slowDelay() time.Duration {
	return time.Duration(slowFraction * float64(hybrid.DefaultTimeout))
}

// event is something the fault injector did, at a time since the start.
type event struct {
	at    time.Duration
	label string
	back  bool // the node answers again from here
	quiet bool // one of many (a flap's downs and ups): not marked on the chart
}

// injector injects one fault into the victim at faultAt after start and,
// for pause, slow and flap, ends it at backAt. It never outlives the run:
// its sleeps end with the run's context.
type injector struct {
	cl              *cluster
	px              *toxitest.Proxy // in front of the victim, for slow and flap; else nil
	fault           string
	victim          int
	name            string // the victim's: a node's name, or on a cluster the master's address
	start           time.Time
	faultAt, backAt time.Duration
	killed          *atomic.Int64 // failover: set to the time since start once the master is dead
	// reshard and scale-out: the bench's context, which the move runs on,
	// and when the slots started and ended moving (since start; 0: not
	// yet).
	moveCtx          context.Context
	moveFrom, moveTo atomic.Int64

	mu     sync.Mutex
	events []event
	flaps  int // the path's down periods, for flap
}

func (in *injector) record(label string, back, quiet bool) {
	in.mu.Lock()
	in.events = append(in.events, event{at: time.Since(in.start), label: label, back: back, quiet: quiet})
	in.mu.Unlock()
}

// done returns what the injector did; call it once run has returned.
func (in *injector) done() ([]event, int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.events, in.flaps
}

// sleepUntil sleeps until at after the start; false if ctx ended first.
func (in *injector) sleepUntil(ctx context.Context, at time.Duration) bool {
	t := time.NewTimer(time.Until(in.start.Add(at)))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// run waits for faultAt and injects the fault. It returns early, without
// injecting, when ctx ends first.
func (in *injector) run(ctx context.Context) error {
	if !in.sleepUntil(ctx, in.faultAt) {
		return nil
	}
	cl, i, name := in.cl, in.victim, in.name
	switch in.fault {
	case faultReshard, faultScaleOut:
		return in.move(in.moveCtx)
	case faultFailover:
		replica := cl.rc.Replicas[i][0].Addr()
		if err := cl.rc.Masters[i].Kill(); err != nil {
			return err
		}
		in.killed.Store(int64(time.Since(in.start)))
		in.record(fmt.Sprintf("failover %s killed (replica %s)", name, replica), false, false)
		in.awaitPromotion(ctx, replica)
		return nil
	case "kill":
		in.record("kill "+name, false, false)
		return cl.kill(i)
	case "pause":
		what := "pause (SIGSTOP) "
		if cl.servers == nil {
			what = "pause (emulated: closed) "
		}
		in.record(what+name, false, false)
		if err := cl.pause(i); err != nil {
			return err
		}
		// Resume even when the run ends first: a frozen node would hang
		// the clean-up (redistest resumes before it kills, too).
		in.sleepUntil(ctx, in.backAt)
		if err := cl.resume(i); err != nil {
			return err
		}
		in.record("resume "+name, true, false)
		return nil
	case "slow":
		d := slowDelay()
		toxic, err := in.px.AddLatency(toxitest.Downstream, d, time.Duration(slowJitter*float64(d)))
		if err != nil {
			return err
		}
		in.record(fmt.Sprintf("slow %s (+%v ± %.0f%% per reply)", name, d, 100*slowJitter), false, false)
		ok := in.sleepUntil(ctx, in.backAt)
		if err := in.px.RemoveToxic(toxic); err != nil {
			return err
		}
		if ok {
			in.record("fast again "+name, true, false)
		}
		return nil
	case "flap":
		return in.flap(ctx, name)
	default:
		in.record("restart "+name, false, false)
		if err := cl.restart(context.WithoutCancel(ctx), i); err != nil {
			return err
		}
		in.record("back (empty) "+name, true, false)
		return nil
	}
}

// flap takes the path to the victim down and up, each state lasting
// [flapMin, flapMax] (seeded), from faultAt until backAt, then leaves it
// up. Down, the proxy stops listening and closes every connection through
// it: the node's clients see their connections closed and new ones
// refused. The loop is bounded by the window's length over flapMin.
func (in *injector) flap(ctx context.Context, name string) error {
	rng := rand.New(rand.NewPCG(faultSeed, 1))
	draw := func() time.Duration { return flapMin + time.Duration(rng.Int64N(int64(flapMax-flapMin)+1)) }
	at := in.faultAt
	maxStates := int((in.backAt-in.faultAt)/flapMin) + 1
	down := false
	ok := true
	for n := 0; n < maxStates && at < in.backAt && ok; n++ {
		down = !down
		if down {
			in.px.Disable()
		} else if err := in.px.Restart(); err != nil {
			return err
		}
		switch {
		case n == 0:
			in.record(fmt.Sprintf("flap %s (down and up every %v–%v)", name, flapMin, flapMax), false, false)
		case down:
			in.record("down", false, true)
		default:
			in.record("up", false, true)
		}
		if down {
			in.mu.Lock()
			in.flaps++
			in.mu.Unlock()
		}
		at = min(at+draw(), in.backAt)
		ok = in.sleepUntil(ctx, at)
	}
	if err := in.px.Restart(); err != nil {
		return err
	}
	if ok {
		in.record("steady "+name, true, false)
	}
	return nil
}

// eventSummary writes a row's events for the table: a label seen more
// than once is written once with its count ("down ×3"), in the order of
// first appearance.
func eventSummary(labels []string) string {
	var order []string
	count := map[string]int{}
	for _, l := range labels {
		if count[l] == 0 {
			order = append(order, l)
		}
		count[l]++
	}
	parts := make([]string, len(order))
	for i, l := range order {
		parts[i] = l
		if count[l] > 1 {
			parts[i] = fmt.Sprintf("%s ×%d", l, count[l])
		}
	}
	return strings.Join(parts, "; ")
}
