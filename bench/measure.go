package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"time"
)

// maxDecisions bounds the decisions of one run whatever -duration says,
// so that the latency samples (one in 8) stay under about 32 MB.
const maxDecisions = 1 << 25

// result is one line of the report: one workload against one system.
// Its JSON form is documented in doc.go.
type result struct {
	Workload              string           `json:"workload"`
	System                string           `json:"system"`
	Nodes                 string           `json:"nodes"`
	Decisions             int64            `json:"decisions"`
	Seconds               float64          `json:"seconds"`
	DecisionsPerSec       float64          `json:"decisions_per_sec"`
	P50us                 float64          `json:"p50_us"`
	P99us                 float64          `json:"p99_us"`
	RedisCallsPerDecision float64          `json:"redis_calls_per_decision"`
	Admitted              int64            `json:"admitted"`
	Ideal                 float64          `json:"ideal"`
	AdmittedPctOfIdeal    float64          `json:"admitted_pct_of_ideal"`
	Sources               map[string]int64 `json:"sources"`
	Errors                int64            `json:"errors"`
}

// tally is what one goroutine counted.
type tally struct {
	decisions, admitted, errors int64
	firstErr                    error
	perKey                      map[int]int64 // requests per key index
	latency                     []time.Duration
}

// measure runs w against the named system for s.duration with
// s.concurrency goroutines, on freshly flushed nodes, and closes the
// system before returning.
func measure(ctx context.Context, cl *cluster, w workload, name string, s settings, stderr io.Writer) (res result, err error) {
	if err := cl.flush(ctx); err != nil {
		return res, err
	}
	sys, err := newSystem(name, cl, w, s, stderr)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, sys.close()) }()

	calls0, src0 := sys.counters()
	perG := max(1, maxDecisions/s.concurrency)
	tallies := make([]tally, s.concurrency)
	start := time.Now()
	stopCtx, cancel := context.WithDeadline(ctx, start.Add(s.duration))
	defer cancel()
	stop := stopCtx.Done()
	var wg sync.WaitGroup
	for g := range s.concurrency {
		wg.Go(func() {
			t := &tallies[g]
			t.perKey = map[int]int64{}
			p := w.picker(uint64(g) + 1)
			for i := 0; i < perG; i++ {
				if i%16 == 0 {
					select {
					case <-stop:
						return
					default:
					}
				}
				k := p.next()
				var ok bool
				var err error
				if i%8 == 0 {
					t0 := time.Now()
					ok, err = sys.allow(ctx, g, i, w.keys[k])
					t.latency = append(t.latency, time.Since(t0))
				} else {
					ok, err = sys.allow(ctx, g, i, w.keys[k])
				}
				t.decisions++
				t.perKey[k]++
				if ok {
					t.admitted++
				}
				if err != nil {
					if t.errors == 0 {
						t.firstErr = err
					}
					t.errors++
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	calls1, src1 := sys.counters()

	res = result{Workload: w.name, System: name, Nodes: cl.kind, Seconds: elapsed.Seconds(), Sources: map[string]int64{}}
	perKey := map[int]int64{}
	var lat []time.Duration
	var firstErr error
	for _, t := range tallies {
		res.Decisions += t.decisions
		res.Admitted += t.admitted
		res.Errors += t.errors
		if firstErr == nil {
			firstErr = t.firstErr
		}
		for k, n := range t.perKey {
			perKey[k] += n
		}
		lat = append(lat, t.latency...)
	}
	if res.Errors > 0 && ctx.Err() == nil {
		fmt.Fprintf(stderr, "bench: %s/%s: %d of %d decisions failed, first: %v\n", w.name, name, res.Errors, res.Decisions, firstErr)
	}
	if res.Decisions == 0 {
		return res, nil
	}
	res.DecisionsPerSec = float64(res.Decisions) / elapsed.Seconds()
	slices.Sort(lat)
	if len(lat) > 0 {
		res.P50us = micros(lat[len(lat)/2])
		res.P99us = micros(lat[len(lat)*99/100])
	}
	res.RedisCallsPerDecision = float64(calls1-calls0) / float64(res.Decisions)
	for src, n := range src1 {
		if d := n - src0[src]; d > 0 {
			res.Sources[src] = d
		}
	}
	res.Ideal = ideal(w, perKey, elapsed)
	if res.Ideal > 0 {
		res.AdmittedPctOfIdeal = 100 * float64(res.Admitted) / res.Ideal
	}
	return res, nil
}

// ideal is what one exact limiter would have admitted in elapsed: the sum
// over keys of min(requests, burst + rate × elapsed), every bucket
// starting full.
func ideal(w workload, perKey map[int]int64, elapsed time.Duration) float64 {
	capPerKey := float64(w.limit.Capacity()) + float64(w.limit.Rate)*elapsed.Seconds()/w.limit.Period.Seconds()
	var sum float64
	for _, n := range perKey {
		sum += math.Min(float64(n), capPerKey)
	}
	return sum
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
