package main

import (
	"context"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/hybridlimit/hybridlimit/hybrid"
)

// maxDispatchSleep bounds a dispatcher's sleep, so that it sees cancellation.
const maxDispatchSleep = 10 * time.Millisecond

// arrivals draws seeded Poisson due times; not safe for concurrent use.
type arrivals struct {
	rng  *rand.Rand
	mean float64 // mean ns between arrivals
	at   float64 // the last due time, ns since the start
}

// newArrivals returns arrivals at rate per second, the first one gap in.
func newArrivals(rate float64, seed uint64) *arrivals {
	return &arrivals{rng: rand.New(rand.NewPCG(seed, 0xda942042e4dd58b5)), mean: 1e9 / rate}
}

// next returns the due time of the next arrival, as time since the start.
func (a *arrivals) next() time.Duration {
	a.at += a.rng.ExpFloat64() * a.mean
	return time.Duration(a.at)
}

// stepConfig is one open-loop step.
type stepConfig struct {
	rate    float64             // arrivals per second
	window  time.Duration       // arrivals are due in [0, window)
	workers int                 // goroutines making the calls
	drain   time.Duration       // after the window, how long queued arrivals may still start
	queue   int                 // arrivals waiting for a worker at most; one more ends the step
	seed    uint64              // of the arrival process
	sleep   func(time.Duration) // the dispatcher's wait; nil: dispatchSleep on dispatchThread
}

// stepStats is a step's figures; latency runs from due to return or abandonment.
type stepStats struct {
	tally
	scheduled int64                   // arrivals released to the workers
	overflow  bool                    // the queue was full: the step ended early
	window    time.Duration           // when the dispatcher stopped: the window's end, earlier on overflow
	elapsed   time.Duration           // from the start to the last call's return (at least window)
	lag       *hdrhistogram.Histogram // from due to released, per arrival
}

// achieved is the calls' rate over the arrivals' (1: kept up; 0: none).
func (st *stepStats) achieved() float64 {
	if st.scheduled == 0 || st.elapsed <= 0 || st.window <= 0 {
		return 0
	}
	return (float64(st.decisions) / st.elapsed.Seconds()) / (float64(st.scheduled) / st.window.Seconds())
}

// latencyShards is how many histograms, a lock each, a step's workers
// record into: with one lock the workers queued on it.
const latencyShards = 16

// offer runs one open-loop step of w against sys; on ctx's cancellation it
// abandons what is queued. No goroutine it starts outlives it.
func offer(ctx context.Context, sys system, w workload, c stepConfig) *stepStats {
	st := &stepStats{tally: tally{latency: newHist()}, lag: newHist()}
	queue := make(chan time.Duration, c.queue)
	var deadline atomic.Int64 // ns since start after which queued arrivals are abandoned
	deadline.Store(math.MaxInt64)
	var shards [latencyShards]struct {
		mu sync.Mutex
		h  *hdrhistogram.Histogram
		_  [48]byte
	}
	for i := range shards {
		shards[i].h = newHist()
	}
	tallies := make([]tally, c.workers)
	start := time.Now()

	var wg sync.WaitGroup
	for g := range tallies {
		wg.Go(func() {
			t, sh, p := &tallies[g], &shards[g%latencyShards], w.picker(uint64(g)+1)
			// A context of its own: a shared Done channel is contended.
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			i := 0
			for due := range queue {
				now := time.Since(start)
				if int64(now) > deadline.Load() {
					t.abandoned++
				} else {
					ok, src, err := sys.allow(ctx, g, i, w.keys.key(p.next()), w.limits)
					now = time.Since(start)
					t.count(ok, src, err)
					t.last, i = now, i+1
				}
				sh.mu.Lock()
				record(sh.h, now-due)
				sh.mu.Unlock()
			}
		})
	}

	st.window = dispatch(ctx, c, start, queue, st)
	deadline.Store(int64(max(st.window, time.Since(start)) + c.drain))
	if ctx.Err() != nil {
		deadline.Store(0) // abandon what is queued
	}
	close(queue)
	wg.Wait()
	for i := range shards {
		st.latency.Merge(shards[i].h)
	}
	for i := range tallies {
		st.add(&tallies[i])
	}
	st.elapsed = max(st.window, st.last)
	return st
}

// dispatch releases the arrivals due in [0, c.window) into queue when due,
// counting st.scheduled and recording st.lag, and returns when it stopped:
// c.window, or earlier on a full queue (st.overflow) or cancellation.
func dispatch(ctx context.Context, c stepConfig, start time.Time, queue chan<- time.Duration, st *stepStats) time.Duration {
	sleep := c.sleep
	if sleep == nil {
		defer dispatchThread()()
		sleep = dispatchSleep
	}
	a, cancelled := newArrivals(c.rate, c.seed), ctx.Done()
	for next := a.next(); next < c.window; {
		if isClosed(cancelled) {
			return time.Since(start)
		}
		now := time.Since(start)
		if next > now {
			sleep(min(next-now, maxDispatchSleep))
			continue
		}
		for ; next <= now && next < c.window; next = a.next() {
			record(st.lag, now-next)
			select {
			case queue <- next:
				st.scheduled++
			default:
				st.overflow = true
				return now
			}
		}
	}
	return c.window
}

// noSystem answers at once: against it the generator measures itself.
type noSystem struct{}

var _ system = noSystem{}

func (noSystem) allow(context.Context, int, int, string, []hybrid.Limit) (bool, hybrid.Source, error) {
	return true, hybrid.SourceRemote, nil
}
func (noSystem) calls() int64 { return 0 }
func (noSystem) close() error { return nil }
