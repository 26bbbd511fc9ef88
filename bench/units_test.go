package main

import (
	"math"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hybridlimit/hybridlimit/hybrid"
)

func TestParseLimit(t *testing.T) {
	tests := []struct {
		in   string
		want hybrid.Limit
		ok   bool
	}{
		{"10000/s", hybrid.PerSecond(10000), true},
		{"1000/m", hybrid.PerMinute(1000), true},
		{"100/h", hybrid.PerHour(100), true},
		{"50/250ms", hybrid.Limit{Rate: 50, Period: 250 * time.Millisecond}, true},
		{"1_000_000/1s", hybrid.PerSecond(1_000_000), true},
		{" 7 / 2s ", hybrid.Limit{Rate: 7, Period: 2 * time.Second}, true},
		{"10", hybrid.Limit{}, false},
		{"0/s", hybrid.Limit{}, false},
		{"-5/s", hybrid.Limit{}, false},
		{"5/0s", hybrid.Limit{}, false},
		{"5/1ns", hybrid.Limit{}, false}, // not a whole number of microseconds
		{"5/d", hybrid.Limit{}, false},
		{"99999999999999999999/s", hybrid.Limit{}, false},
	}
	for _, tt := range tests {
		got, err := parseLimit(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseLimit(%q) = %v, %v; want %v, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
		if tt.ok {
			if back, err := parseLimit(formatLimit(got)); err != nil || back != got {
				t.Errorf("parseLimit(formatLimit(%v)) = %v, %v; want it back", got, back, err)
			}
		}
	}
}

func TestKeyCapacity(t *testing.T) {
	// 12:00:00.5 UTC, a run of 2.2 s.
	start := time.Date(2025, 1, 1, 12, 0, 0, 500_000_000, time.UTC)
	elapsed := 2200 * time.Millisecond
	tests := []struct {
		l    hybrid.Limit
		want float64
	}{
		{hybrid.PerSecond(100), 100 + 220},
		{hybrid.Limit{Rate: 100, Period: time.Second, Burst: 10}, 10 + 220},
		{hybrid.Limit{Algorithm: hybrid.LeakyBucket, Rate: 100, Period: time.Second}, 100 + 220},
		// 100 at 0.5 s; in second 1 the estimate frees units as second 0
		// fades, 99 before its end (the 100th frees at 2 s, in second 2);
		// at 2.7 s second 1's 99 still weigh 29.7.
		{hybrid.Limit{Algorithm: hybrid.SlidingWindowCounter, Rate: 100, Period: time.Second}, 100 + 99 + 70},
		// [0.5, 2.7] touches the windows of seconds 0, 1 and 2.
		{hybrid.Limit{Algorithm: hybrid.FixedWindow, Rate: 100, Period: time.Second}, 300},
		{hybrid.Limit{Algorithm: hybrid.FixedWindow, Rate: 100, Period: time.Minute}, 100},
		{hybrid.Limit{Algorithm: hybrid.SlidingWindowLog, Rate: 100, Period: time.Second}, 300},
		{hybrid.Limit{Algorithm: hybrid.SlidingWindowLog, Rate: 100, Period: time.Minute}, 100},
	}
	for _, tt := range tests {
		if got := keyCapacity(tt.l, start, elapsed); math.Abs(got-tt.want) > 1e-6 {
			t.Errorf("keyCapacity(%v, 2.2s) = %v, want %v", tt.l, got, tt.want)
		}
	}
	perKey := []uint32{1000, 5, 320, 0}
	if got := ideal([]hybrid.Limit{hybrid.PerSecond(100)}, &keyCounts{n: perKey}, start, elapsed); math.Abs(got-645) > 1e-6 {
		t.Errorf("ideal = %v, want 320 + 5 + 320", got)
	}
}

// TestSlidingWindowLogCapacity: the ideal of a SlidingWindowLog key is
// what package limit admits to a key asked for all it has at every step
// from its first admission: a run of exactly 3 periods whose first
// admission comes after its start admits 3 × the rate, not 4 (bench said 75 % of
// the ideal for a hot key at -duration 3s, 100 % at 3500ms, the limiter
// being right both times), and one of 3.5 periods 4 ×.
func TestSlidingWindowLogCapacity(t *testing.T) {
	start := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	l := hybrid.Limit{Algorithm: hybrid.SlidingWindowLog, Rate: 100, Period: time.Second}
	for _, tc := range []struct {
		first, run time.Duration
		want       float64
	}{
		{0, 3 * time.Second, 400},
		{time.Millisecond, 3 * time.Second, 300},
		{300 * time.Microsecond, 3500 * time.Millisecond, 400},
		{900 * time.Millisecond, 2 * time.Second, 200},
	} {
		from, d := start.Add(tc.first), tc.run-tc.first
		got, sim := keyCapacity(l, from, d), saturated(l, from, d)
		if got != tc.want || sim != tc.want {
			t.Errorf("first admission at %v of a %v run: keyCapacity %v, limit.Take %v; want %v", tc.first, tc.run, got, sim, tc.want)
		}
		counts := &keyCounts{n: []uint32{1_000_000}, first: make([]atomic.Int64, 1)}
		counts.seen(0, tc.first)
		if got := ideal([]hybrid.Limit{l}, counts, start, tc.run); got != tc.want {
			t.Errorf("first admission at %v of a %v run: ideal %v, want %v", tc.first, tc.run, got, tc.want)
		}
	}
}

func TestHist(t *testing.T) {
	h := newHist()
	if q := quantileUs(h, 50); q != 0 {
		t.Errorf("quantileUs(empty, 50) = %v, want 0", q)
	}
	// 1..10000 µs, one each: p50 is 5000 µs, p99 9900 µs, within 1%.
	for i := 1; i <= 10000; i++ {
		record(h, time.Duration(i)*time.Microsecond)
	}
	for _, tt := range []struct{ q, want float64 }{{50, 5000}, {99, 9900}, {99.9, 9990}, {0.1, 10}} {
		if got := quantileUs(h, tt.q); math.Abs(got-tt.want)/tt.want > 0.01 {
			t.Errorf("quantileUs(h, %v) = %v µs, want %v within 1%%", tt.q, got, tt.want)
		}
	}
	// Sub-microsecond latencies (a lease's) keep their precision; those
	// out of range are clamped, not lost.
	small := newHist()
	for _, d := range []time.Duration{150, 150, 150, -time.Second, 2 * histMax} {
		record(small, d)
	}
	if n := small.TotalCount(); n != 5 {
		t.Errorf("TotalCount() = %d, want 5", n)
	}
	if got := quantileUs(small, 50); math.Abs(got-0.15)/0.15 > 0.01 {
		t.Errorf("quantileUs(small, 50) = %v µs, want 0.15 within 1%%", got)
	}
	if got, want := time.Duration(small.Max()), histMax; math.Abs(float64(got-want))/float64(want) > 0.01 {
		t.Errorf("Max() = %v, want %v within 1%%", got, want)
	}
	if got := small.Min(); got != 0 {
		t.Errorf("Min() = %d, want 0 (a negative duration counted as 0)", got)
	}
	m := newHist()
	m.Merge(h)
	m.Merge(h)
	if m.TotalCount() != 2*h.TotalCount() || quantileUs(m, 50) != quantileUs(h, 50) {
		t.Errorf("merge: n %d, p50 %v; want %d, %v", m.TotalCount(), quantileUs(m, 50), 2*h.TotalCount(), quantileUs(h, 50))
	}
}

func TestBreakerTimes(t *testing.T) {
	ms := func(v float64) *float64 { return &v }
	at := func(ms int) time.Duration { return time.Duration(ms) * time.Millisecond }
	samples := []sample{{at(0), 0}, {at(100), 0}, {at(120), 2}, {at(140), 4}, {at(500), 4}, {at(520), 1}, {at(540), 0}, {at(560), 3}, {at(580), 0}, {at(600), 0}}
	tests := []struct {
		name        string
		faultAt     time.Duration
		backAt      *float64
		deg, recovr *float64
	}{
		{"kill", at(100), nil, ms(40), nil},
		{"pause", at(100), ms(0.5), ms(40), ms(80)},
		{"not injected", -1, nil, nil, nil},
		{"never all degraded", at(550), ms(0.55), nil, ms(30)},
		{"never recovered", at(100), ms(0.7), ms(40), nil},
	}
	for _, tt := range tests {
		deg, rec := breakerTimes(samples, tt.faultAt, tt.backAt, 4)
		if !sameFloat(deg, tt.deg) || !sameFloat(rec, tt.recovr) {
			t.Errorf("%s: breakerTimes = %v, %v; want %v, %v", tt.name, show(deg), show(rec), show(tt.deg), show(tt.recovr))
		}
	}
}

func sameFloat(a, b *float64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return math.Abs(*a-*b) < 1e-9
}

func show(p *float64) any {
	if p == nil {
		return "nil"
	}
	return *p
}

// TestChartsDegenerateData draws charts from data gonum cannot put on a
// log axis as is: zeros, one value everywhere, latencies below 1 µs.
func TestChartsDegenerateData(t *testing.T) {
	dir := t.TempDir()
	var rows []second
	for i := range 4 {
		rows = append(rows, second{T: float64(i), Interval: 1, Sources: map[string]int64{}, P99us: 0.5})
	}
	sum := faultSummary{Fault: "restart", Node: "n", Sources: map[string]int64{"lease": 0}}
	marks := []marker{{x: 1, label: "restart n"}, {x: 1.01, label: "back n", row: 1}}
	if err := writeSVG(dir+"/f.svg", faultPlots(rows, sum, marks)...); err != nil {
		t.Errorf("fault chart of zeros: %v", err)
	}
	res := []result{{setup: setup{Workload: "hot", System: sysRedisRate}}, {setup: setup{Workload: "hot", System: sysHybrid, LeaseFraction: 0.01}}}
	if err := writeSVG(dir+"/s.svg", sweepPlots([]string{"hot"}, res)...); err != nil {
		t.Errorf("sweep chart of zeros: %v", err)
	}
	svgTexts(t, dir+"/f.svg")
	svgTexts(t, dir+"/s.svg")
	for _, tt := range []struct {
		lo, hi float64
		want   string
	}{{0.05, 2, "0.1"}, {3, 2e6, "1M"}} {
		var labels []string
		for _, tk := range (logTicks{}).Ticks(tt.lo, tt.hi) {
			if tk.Label != "" {
				labels = append(labels, tk.Label)
			}
		}
		if !slices.Contains(labels, tt.want) {
			t.Errorf("logTicks(%v, %v) labels %q, want %q among them", tt.lo, tt.hi, labels, tt.want)
		}
	}
}

func TestEventSummary(t *testing.T) {
	tests := []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"kill n"}, "kill n"},
		{[]string{"flap n", "up", "down", "up", "down", "up"}, "flap n; up ×3; down ×2"},
	}
	for _, tt := range tests {
		if got := eventSummary(tt.in); got != tt.want {
			t.Errorf("eventSummary(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
