package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
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
// for pause, slow and flap, ends it at backAt. Its sleeps end with the
// run's context; a slot move runs to its end.
type injector struct {
	cl              *cluster
	px              *toxitest.Proxy // in front of the victim, for slow and flap; else nil
	fault           string
	victim          int
	name            string // the victim's: a node's name, or on a cluster the master's address
	start           time.Time
	faultAt, backAt time.Duration

	// Since start, read while the fault runs (0: not yet): hit is the
	// first event that is not quiet (the kill, the slots starting to
	// move), healed the first back (the replica promoted, the slots
	// moved).
	hit, healed atomic.Int64
	// What it did, to be read once run has returned: its events, and
	// for flap the path's down periods.
	events []event
	flaps  int
}

// record stamps ev with the time since the start and keeps it.
func (in *injector) record(ev event) {
	ev.at = time.Since(in.start)
	if !ev.quiet {
		in.hit.CompareAndSwap(0, int64(ev.at))
	}
	if ev.back {
		in.healed.CompareAndSwap(0, int64(ev.at))
	}
	in.events = append(in.events, ev)
}

// sleep waits d; false if ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// run waits for faultAt and injects the fault, unless ctx ends first.
// The slot moves run on bench, the bench's context, not the run's:
// redis-cli stopped midway would leave slots open.
func (in *injector) run(ctx, bench context.Context) error {
	if !sleep(ctx, time.Until(in.start.Add(in.faultAt))) {
		return nil
	}
	cl, i, name := in.cl, in.victim, in.name
	switch in.fault {
	case "kill":
		in.record(event{label: "kill " + name})
		return cl.kill(i)
	case "pause":
		what := "pause (SIGSTOP) "
		if cl.servers == nil {
			what = "pause (emulated: closed) "
		}
		in.record(event{label: what + name})
		if err := cl.pause(i); err != nil {
			return err
		}
		// Resume even when the run ends first: a frozen node would hang
		// the clean-up (redistest resumes before it kills, too).
		return in.until(ctx, "resume "+name, func() error { return cl.resume(i) })
	case "restart":
		in.record(event{label: "restart " + name})
		if err := cl.restart(context.WithoutCancel(ctx), i); err != nil {
			return err
		}
		in.record(event{label: "back (empty) " + name, back: true})
		return nil
	case "slow":
		d := slowDelay()
		toxic, err := in.px.AddLatency(toxitest.Downstream, d, time.Duration(slowJitter*float64(d)))
		if err != nil {
			return err
		}
		in.record(event{label: fmt.Sprintf("slow %s (+%v ± %.0f%% per reply)", name, d, 100*slowJitter)})
		return in.until(ctx, "fast again "+name, func() error { return in.px.RemoveToxic(toxic) })
	case "flap":
		return in.flap(ctx)
	case faultFailover:
		return in.failover(ctx)
	default:
		return in.move(bench)
	}
}

// until waits for backAt, then ends the fault with undo even if ctx ended
// first, and records label as the node's return if it did not.
func (in *injector) until(ctx context.Context, label string, undo func() error) error {
	ok := sleep(ctx, time.Until(in.start.Add(in.backAt)))
	if err := undo(); err != nil {
		return err
	}
	if ok {
		in.record(event{label: label, back: true})
	}
	return nil
}

// flap takes the path to the victim down and up, each state lasting
// [flapMin, flapMax] (seeded), from faultAt until backAt, then leaves it
// up. Down, the proxy stops listening and closes every connection through
// it: the node's clients see their connections closed and new ones
// refused.
func (in *injector) flap(ctx context.Context) error {
	rng := rand.New(rand.NewPCG(faultSeed, 1))
	at, down := in.faultAt, false
	for sleeping := true; sleeping && at < in.backAt; {
		if down = !down; down {
			in.px.Disable()
			in.flaps++
		} else if err := in.px.Restart(); err != nil {
			return err
		}
		switch {
		case at == in.faultAt:
			in.record(event{label: fmt.Sprintf("flap %s (down and up every %v–%v)", in.name, flapMin, flapMax)})
		case down:
			in.record(event{label: "down", quiet: true})
		default:
			in.record(event{label: "up", quiet: true})
		}
		at = min(at+flapMin+time.Duration(rng.Int64N(int64(flapMax-flapMin)+1)), in.backAt)
		sleeping = sleep(ctx, time.Until(in.start.Add(at)))
	}
	return in.until(ctx, "steady "+in.name, in.px.Restart)
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
	for i, l := range order {
		if count[l] > 1 {
			order[i] = fmt.Sprintf("%s ×%d", l, count[l])
		}
	}
	return strings.Join(order, "; ")
}
