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

// The open-loop generator of -sweep load. A dispatcher releases the
// arrivals of a Poisson process, each due at a time drawn before the run
// and independent of any completion, into a queue that a pool of workers
// takes them from; a call's latency runs from when its arrival was due to
// when the call returned. A call that waits in the queue because every
// worker is busy counts its wait: no coordinated omission. The
// dispatcher's own lateness (how long after its due time it released an
// arrival) is recorded apart, so that a generator that falls behind its
// schedule is seen as such.

// maxDispatchSleep bounds one sleep of the dispatcher, so that it sees a
// cancellation within that time however sparse the arrivals.
const maxDispatchSleep = 10 * time.Millisecond

// arrivals draws the due times of a Poisson process: gaps exponentially
// distributed with mean 1/rate, from a seeded source. It is not safe for
// concurrent use.
type arrivals struct {
	rng  *rand.Rand
	mean float64 // nanoseconds between arrivals, on average
	at   float64 // the last due time, in nanoseconds since the start
}

// newArrivals returns the arrivals of rate per second, the first one gap
// after the start.
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
	rate    float64       // arrivals per second
	window  time.Duration // arrivals are due in [0, window)
	workers int           // goroutines making the calls
	drain   time.Duration // after the window, how long queued arrivals may still start
	queue   int           // arrivals waiting for a worker at most; one more ends the step
	seed    uint64        // of the arrival process
	// sleep is how the dispatcher waits for the next due time; nil:
	// dispatchSleep, on a thread of its own (dispatchThread).
	sleep func(time.Duration)
}

// stepStats is what one step measured. Its latency holds every released
// arrival's time from due to its call's return, or for an abandoned one
// to when it was abandoned (a lower bound of what it would have taken).
type stepStats struct {
	tally
	scheduled int64                   // arrivals released to the workers
	overflow  bool                    // the queue was full: the step ended early
	window    time.Duration           // when the dispatcher stopped: the window's end, earlier on overflow
	elapsed   time.Duration           // from the start to the last call's return (at least window)
	lag       *hdrhistogram.Histogram // from due to released, per arrival
}

// achieved is the rate of the calls that returned as a share of the rate
// of the arrivals: 1 when the system kept up; 0 with no arrivals.
func (st *stepStats) achieved() float64 {
	if st.scheduled == 0 || st.elapsed <= 0 || st.window <= 0 {
		return 0
	}
	return (float64(st.decisions) / st.elapsed.Seconds()) / (float64(st.scheduled) / st.window.Seconds())
}

// latencyShards is how many histograms the workers of a step record
// into, a lock each: with one lock for all, the 2,048 workers of a high
// step queued on it, and it was the harness's cost that the client CPU
// per decision showed.
const latencyShards = 16

// offer runs one open-loop step of w against sys and returns what it
// measured. It returns when every released arrival has been called or
// abandoned; on ctx's cancellation the remaining ones are abandoned at
// once. No goroutine it starts outlives it.
func offer(ctx context.Context, sys system, w workload, c stepConfig) *stepStats {
	st := &stepStats{tally: tally{latency: newHist()}, lag: newHist()}
	queue := make(chan time.Duration, c.queue)
	// deadline is when, in ns since start, queued arrivals stop being
	// started: none until the dispatcher has stopped.
	var deadline atomic.Int64
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
			// A context of its own, as each request of a server has: the
			// systems select on its Done channel, which all the workers
			// would otherwise share, and queue on its lock.
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

	func() {
		sleep := c.sleep
		if sleep == nil {
			defer dispatchThread()()
			sleep = dispatchSleep
		}
		st.window = dispatch(ctx, c, start, queue, st, sleep)
	}()
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

// dispatch releases the arrivals due in [0, c.window) into queue, each as
// soon as it is due, and returns when it stopped, as time since start:
// c.window, or earlier when the queue was full (st.overflow) or ctx was
// cancelled. It counts st.scheduled and records st.lag.
func dispatch(ctx context.Context, c stepConfig, start time.Time, queue chan<- time.Duration, st *stepStats, sleep func(time.Duration)) time.Duration {
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

// noSystem answers every call at once and asks no one: against it the
// generator measures itself.
type noSystem struct{}

var _ system = noSystem{}

func (noSystem) allow(context.Context, int, int, string, []hybrid.Limit) (bool, hybrid.Source, error) {
	return true, hybrid.SourceRemote, nil
}
func (noSystem) calls() int64 { return 0 }
func (noSystem) close() error { return nil }
