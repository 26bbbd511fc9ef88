package main

import (
	"bytes"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/hybridlimit/hybridlimit/hybrid"
)

// TestKeySpace: made keys are the listed keys, one by one, and the seed's
// 10 M keys are made, not held.
func TestKeySpace(t *testing.T) {
	listed, made := listedKeys("ks:", 1000), madeKeys("ks:", 1000)
	for i := range 1000 {
		if l, m := listed.key(i), made.key(i); l != m || l != keyPrefix()+"ks:"+strconv.Itoa(i) {
			t.Fatalf("key(%d) = %q listed, %q made; want both %q", i, l, m, keyPrefix()+"ks:"+strconv.Itoa(i))
		}
	}
	if one := oneKey("hot"); one.len() != 1 || one.key(0) != keyPrefix()+"hot" {
		t.Errorf("oneKey(hot) = %d keys, key(0) %q; want 1, %q", one.len(), one.key(0), keyPrefix()+"hot")
	}
	s, err := parse([]string{"-workload", seedWorkload}, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := newWorkload(seedWorkload, s)
	if w.keys.len() != seedKeyCount || w.keys.list != nil || !w.zipf || w.s != zipfS {
		t.Errorf("seed workload: %d keys, listed %v, zipf %v, s %v; want %d made keys, Zipf with s %v",
			w.keys.len(), w.keys.list != nil, w.zipf, w.s, seedKeyCount, zipfS)
	}
	want := []hybrid.Limit{hybrid.PerMinute(100), hybrid.PerHour(1000)}
	if !slices.Equal(w.limits, want) {
		t.Errorf("seed limits = %v, want %v", w.limits, want)
	}
	p := w.picker(1)
	for range 100_000 {
		if k := p.next(); k < 0 || k >= seedKeyCount {
			t.Fatalf("picker.next() = %d, want in [0, %d)", k, seedKeyCount)
		}
	}
}

// TestSeedWorkloadFlags: seed runs when named, in the comparison and the
// load sweep, never with all; -keys and -limit apply to it.
func TestSeedWorkloadFlags(t *testing.T) {
	tests := []struct {
		args  []string
		want  []string
		keys  int
		limit string
	}{
		{[]string{"-workload", "seed"}, []string{"seed"}, seedKeyCount, "100/m+1000/h"},
		{[]string{"-workload", "seed", "-keys", "5000", "-limit", "10/s"}, []string{"seed"}, 5000, "10/s"},
		{[]string{"-sweep", "load", "-workload", "seed"}, []string{"seed"}, seedKeyCount, "100/m+1000/h"},
		{[]string{"-workload", "all"}, workloadNames(), 0, ""},
		{[]string{"-sweep", "load", "-workload", "all"}, workloadNames(), 0, ""},
		{nil, workloadNames(), 0, ""},
	}
	for _, tt := range tests {
		s, err := parse(tt.args, nil)
		if err != nil {
			t.Errorf("parse(%q) = %v", tt.args, err)
			continue
		}
		if !slices.Equal(s.workloads, tt.want) {
			t.Errorf("parse(%q) workloads = %q, want %q", tt.args, s.workloads, tt.want)
		}
		if tt.keys > 0 && (s.keyCount(seedWorkload) != tt.keys || formatLimits(s.workloadLimits(seedWorkload)) != tt.limit) {
			t.Errorf("parse(%q): seed %d keys, limits %s; want %d, %s", tt.args, s.keyCount(seedWorkload), formatLimits(s.workloadLimits(seedWorkload)), tt.keys, tt.limit)
		}
	}
	var stderr bytes.Buffer
	if err := run(t.Context(), []string{"-h"}, io.Discard, &stderr); err != nil {
		t.Fatalf("run(-h) = %v", err)
	}
	for _, want := range []string{"seed or all, which is all but seed", "seed 100/m+1000/h", "10000000 for seed"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("run(-h) does not say %q:\n%s", want, stderr.String())
		}
	}
}

// TestSeedWorkload runs the seed workload on miniredis, over 1000 keys,
// in the comparison and the load sweep: rows valid against results.go's
// schema, both limits in them, redis_rate at one to two calls per
// decision (the second limit is asked only when the first admits).
func TestSeedWorkload(t *testing.T) {
	check := func(system, limit string, keys int, callsPerDecision float64, errs int64) {
		t.Helper()
		if limit != "100/m+1000/h" || keys != 1000 || errs != 0 {
			t.Errorf("%s: limit %q, %d keys, %d errors; want 100/m+1000/h, 1000, none", system, limit, keys, errs)
		}
		if system == sysRedisRate && (callsPerDecision <= 1 || callsPerDecision > 2) {
			t.Errorf("redis_rate: %v calls per decision, want in (1, 2]", callsPerDecision)
		}
	}
	out, _ := runBench(t, "-workload", "seed", "-keys", "1000", "-duration", "100ms", "-json")
	rs := results(t, out)
	if len(rs) != len(systemNames) {
		t.Fatalf("%d results, want %d", len(rs), len(systemNames))
	}
	for _, r := range rs {
		if r.Workload != seedWorkload || r.Decisions == 0 {
			t.Errorf("result %+v: want workload seed, decisions", r)
		}
		check(r.System, r.Limit, r.Keys, r.RedisCallsPerDecision, r.Errors)
	}

	out, _ = runBench(t, "-sweep", "load", "-workload", "seed", "-keys", "1000", "-max-load", "10000", "-duration", "100ms", "-json", "-out", t.TempDir())
	rows := decodeLines[loadRow](t, out)
	checkSteps(t, rows, seedWorkload)
	for _, r := range rows {
		if r.System != sysGenerator && r.Decisions > 0 {
			check(r.System, r.Limit, r.Keys, r.RedisCallsPerDecision, r.Errors)
		}
	}
}

// TestKeyCounts: goroutines counting the same keys at once lose no
// count (a plain increment would, and -race would say so).
func TestKeyCounts(t *testing.T) {
	const n, goroutines, rounds = 1000, 8, 50
	counts := &keyCounts{n: make([]uint32, n)}
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range rounds {
				for k := range n {
					counts.count(k)
				}
			}
		})
	}
	wg.Wait()
	for k, c := range counts.n {
		if c != goroutines*rounds {
			t.Fatalf("key %d counted %d times, want %d", k, c, goroutines*rounds)
		}
	}
}

// BenchmarkKey is what a request pays for its key, the Zipf draw
// included: held in memory (keys=listed, as zipf and uniform hold
// theirs) or made from the index (keys=made, as seed makes its 10 M),
// over a key space of n keys. Holding 10 M keys takes 0.9 s to build
// them and 456 MB of heap.
func BenchmarkKey(b *testing.B) {
	for _, n := range []int{1_000_000, seedKeyCount} {
		for _, made := range []bool{false, true} {
			name := "keys=listed"
			if made {
				name = "keys=made"
			}
			b.Run(name+"/n="+strconv.Itoa(n), func(b *testing.B) {
				benchmarkKey(b, made, n)
			})
		}
	}
}

func benchmarkKey(b *testing.B, made bool, n int) {
	ks := madeKeys("bk:", n)
	if !made {
		ks = listedKeys("bk:", n)
	}
	w := workload{keys: ks, zipf: true, s: zipfS}
	p := w.picker(1)
	b.ReportAllocs()
	var sum int
	for b.Loop() {
		sum += len(w.keys.key(p.next()))
	}
	if sum == 0 {
		b.Fatal("no keys")
	}
}
