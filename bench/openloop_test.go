package main

import (
	"context"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hybridlimit/hybridlimit/hybrid"
)

// TestArrivalsArePoisson checks the gaps of the arrival process over a
// fixed seed: their mean is 1/rate, and they are exponential (a share
// 1/e of them longer than the mean, the standard deviation the mean).
func TestArrivalsArePoisson(t *testing.T) {
	const rate, n = 10_000.0, 200_000
	a := newArrivals(rate, 42)
	mean := 1e9 / rate
	var prev time.Duration
	var sum, sumSq float64
	longer := 0
	for range n {
		at := a.next()
		gap := float64(at - prev)
		if gap < 0 {
			t.Fatalf("arrival at %v before the one at %v", at, prev)
		}
		prev = at
		sum += gap
		sumSq += gap * gap
		if gap > mean {
			longer++
		}
	}
	got := sum / n
	if math.Abs(got-mean)/mean > 0.01 {
		t.Errorf("mean gap = %.1f ns, want %.0f ns ± 1%%", got, mean)
	}
	if sd := math.Sqrt(sumSq/n - got*got); math.Abs(sd-mean)/mean > 0.02 {
		t.Errorf("standard deviation of the gaps = %.1f ns, want the mean %.0f ns ± 2%%", sd, mean)
	}
	if share := float64(longer) / n; math.Abs(share-1/math.E) > 0.01 {
		t.Errorf("share of gaps longer than the mean = %.4f, want 1/e = %.4f ± 0.01", share, 1/math.E)
	}

	// One seed, one schedule: every system of a step gets the same one.
	b, c := newArrivals(rate, 7), newArrivals(rate, 7)
	for i := range 1000 {
		if x, y := b.next(), c.next(); x != y {
			t.Fatalf("arrival %d of seed 7: %v and %v, want the same", i, x, y)
		}
	}
}

// dueIn returns how many arrivals of the seed's process at rate fall in
// [0, window): what a step must release.
func dueIn(rate float64, seed uint64, window time.Duration) int64 {
	a := newArrivals(rate, seed)
	var n int64
	for a.next() < window {
		n++
	}
	return n
}

// slowFirst is a system whose first call takes hold and every other call
// no time: it keeps the one worker busy while arrivals fall due.
type slowFirst struct {
	noSystem
	hold time.Duration
	made atomic.Int64 // calls so far
}

func (s *slowFirst) allow(ctx context.Context, _, _ int, _ string, _ []hybrid.Limit) (bool, hybrid.Source, error) {
	if s.made.Add(1) == 1 {
		select {
		case <-time.After(s.hold):
		case <-ctx.Done():
		}
	}
	return true, hybrid.SourceRemote, nil
}

// tinyWorkload is a uniform workload over 100 keys.
func tinyWorkload() workload {
	return workload{name: "uniform", limits: []hybrid.Limit{hybrid.PerSecond(1000)}, keys: listedKeys("u:", 100)}
}

// TestOfferCountsFromDue: with its one worker busy, arrivals wait, and
// their latency runs from when they were due, not from when a worker
// took them (which would be the coordinated omission of a closed loop):
// every arrival of the window is due by 20 ms, none starts before the
// first call returns at 50 ms, so none took less than 30 ms, although
// every call but the first takes no time.
func TestOfferCountsFromDue(t *testing.T) {
	const rate, seed = 2000.0, 3
	window, hold := 20*time.Millisecond, 50*time.Millisecond
	sys := &slowFirst{hold: hold}
	st := offer(t.Context(), sys, tinyWorkload(), stepConfig{rate: rate, window: window, workers: 1, drain: 5 * time.Second, queue: 1000, seed: seed})
	want := dueIn(rate, seed, window)
	if want < 10 {
		t.Fatalf("seed %d gives %d arrivals in %v; pick one that gives more", seed, want, window)
	}
	if st.scheduled != want || st.decisions != want || st.abandoned != 0 || st.overflow {
		t.Errorf("scheduled %d, decisions %d, abandoned %d, overflow %v; want %d, %d, 0, false", st.scheduled, st.decisions, st.abandoned, st.overflow, want, want)
	}
	if n := st.latency.TotalCount(); n != want {
		t.Errorf("%d latencies recorded, want one per arrival, %d", n, want)
	}
	floor := hold - window
	if got := time.Duration(st.latency.Min()); got < floor*99/100 { // within the histogram's precision
		t.Errorf("shortest latency %v, want at least %v: the wait for the busy worker counts", got, floor)
	}
	if got := st.elapsed; got < hold {
		t.Errorf("elapsed %v, want at least the first call's %v", got, hold)
	}
}

// TestOfferAbandons: arrivals still queued when the drain after the window
// is over are abandoned, each counted in the latencies with the wait it
// had, and the step did not keep up.
func TestOfferAbandons(t *testing.T) {
	const rate, seed = 2000.0, 3
	window, drain, hold := 20*time.Millisecond, 30*time.Millisecond, 300*time.Millisecond
	sys := &slowFirst{hold: hold}
	st := offer(t.Context(), sys, tinyWorkload(), stepConfig{rate: rate, window: window, workers: 1, drain: drain, queue: 1000, seed: seed})
	want := dueIn(rate, seed, window)
	if st.scheduled != want || st.decisions != 1 || st.abandoned != want-1 {
		t.Errorf("scheduled %d, decisions %d, abandoned %d; want %d, 1, %d", st.scheduled, st.decisions, st.abandoned, want, want-1)
	}
	if n := st.latency.TotalCount(); n != want {
		t.Errorf("%d latencies recorded, want every arrival's, %d", n, want)
	}
	if got, floor := time.Duration(st.latency.Min()), hold-window; got < floor*99/100 { // within the histogram's precision
		t.Errorf("shortest latency %v, want at least %v: an abandoned arrival counts what it waited", got, floor)
	}
	if a := st.achieved(); a >= minAchieved {
		t.Errorf("achieved %.2f, want below %v", a, minAchieved)
	}
}

// TestOfferOverflow: an arrival that finds the queue full ends the step.
func TestOfferOverflow(t *testing.T) {
	sys := &slowFirst{hold: 100 * time.Millisecond}
	st := offer(t.Context(), sys, tinyWorkload(), stepConfig{rate: 10_000, window: time.Second, workers: 1, drain: time.Second, queue: 8, seed: 1})
	if !st.overflow || st.window >= time.Second {
		t.Errorf("overflow %v, window %v; want true, ended before 1s", st.overflow, st.window)
	}
	if st.scheduled != st.decisions+st.abandoned {
		t.Errorf("scheduled %d, want decisions %d + abandoned %d", st.scheduled, st.decisions, st.abandoned)
	}
}

// TestDispatcherLag: a dispatcher that wakes late is seen to fall behind
// its schedule: its lag is recorded, counted in every latency, and
// judged: the generator is behind.
func TestDispatcherLag(t *testing.T) {
	const late = 2 * time.Millisecond
	oversleep := func(d time.Duration) { time.Sleep(d + late) }
	st := offer(t.Context(), noSystem{}, tinyWorkload(), stepConfig{rate: 2000, window: 100 * time.Millisecond, workers: 4, drain: time.Second, queue: 1000, seed: 5, sleep: oversleep})
	if got := time.Duration(st.lag.Max()); got < late {
		t.Errorf("largest lag %v, want at least the %v every sleep overslept", got, late)
	}
	if got := time.Duration(st.latency.Max()); got < late {
		t.Errorf("largest latency %v, want at least the lag %v", got, late)
	}
	r := loadRow{Scheduled: st.scheduled, Decisions: st.decisions, AchievedPct: 100 * st.achieved(),
		P99us: quantileUs(st.latency, 99), GeneratorLagP99us: quantileUs(st.lag, 99)}
	if r.judgeGenerator(); !r.behind || r.LimitedBy != limitedNone || r.Reason == "" {
		t.Errorf("judgeGenerator(lag p99 %v µs) = %q, %q, behind %v; want not limited, behind, a reason", r.GeneratorLagP99us, r.LimitedBy, r.Reason, r.behind)
	}
}

// TestOfferCancelled: a cancelled step abandons what is queued and
// returns without waiting for the window's end.
func TestOfferCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	sys := &slowFirst{hold: time.Hour} // returns at the cancellation
	done := make(chan *stepStats, 1)
	go func() {
		done <- offer(ctx, sys, tinyWorkload(), stepConfig{rate: 1000, window: time.Hour, workers: 1, drain: time.Hour, queue: 1000, seed: 1})
	}()
	select {
	case st := <-done:
		if st.scheduled != st.decisions+st.abandoned || st.window >= time.Hour {
			t.Errorf("scheduled %d, decisions %d, abandoned %d, window %v; want every arrival called or abandoned, the window cut", st.scheduled, st.decisions, st.abandoned, st.window)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("offer did not return after its context was cancelled")
	}
}
