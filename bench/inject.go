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

const (
	// -fault slow delays each reply by slowFraction of the Limiter's
	// Timeout (bench keeps hybrid.DefaultTimeout), ± slowJitter of it.
	slowFraction = 0.5
	slowJitter   = 0.2
	// -fault flap holds each state, down or up, for [flapMin, flapMax].
	flapMin   = 100 * time.Millisecond
	flapMax   = 300 * time.Millisecond
	faultSeed = 10 // the flap schedule's; toxiproxy draws slow's jitter itself
)

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
// for pause, slow and flap, ends it at backAt.
type injector struct {
	cl              *cluster
	px              *toxitest.Proxy // in front of the victim, for slow and flap; else nil
	fault           string
	victim          int
	name            string // the victim's: a node's name, or on a cluster the master's address
	start           time.Time
	faultAt, backAt time.Duration

	// Since start (0: not yet), the first event not quiet and the first back.
	hit, healed atomic.Int64
	// Read once run has returned.
	events []event
	flaps  int // flap's down periods
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

// run injects the fault at faultAt unless ctx ends first. Slot moves run
// on bench, not ctx: redis-cli stopped midway would leave slots open.
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
		// Resume even if ctx ended: a frozen node would hang the clean-up.
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

// flap takes the path down (connections closed, new ones refused) and up
// from faultAt until backAt, then leaves it up.
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

// eventSummary joins a row's labels in order, repeats counted: "down ×3".
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
