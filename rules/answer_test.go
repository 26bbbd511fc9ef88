package rules

import (
	"testing"
	"time"

	"github.com/hybridlimit/hybridlimit/hybrid"
)

// TestAnswers checks the values both middlewares send, from a Result.
func TestAnswers(t *testing.T) {
	two := Rule{Name: "s", Limits: []hybrid.Limit{hybrid.PerMinute(3), hybrid.PerHour(100)}, MaxDelay: 100 * time.Millisecond}
	names, pol := policy(two)
	rl := &CompiledRule{Rule: two, Names: names, Policy: pol}
	fixed := &CompiledRule{Rule: Rule{Name: "f", Limits: []hybrid.Limit{{Algorithm: hybrid.FixedWindow, Rate: 10, Period: time.Minute}}}, Names: []string{"f"}}
	tests := []struct {
		name      string
		rl        *CompiledRule
		res       hybrid.Result
		rateLimit string // "" for none
		detail    string // for a denial
		millis    string // for a denial: DetailMillis, gRPC's sentence
	}{
		{"allowed", rl, hybrid.Result{Allowed: true, Remaining: 2, ResetAfter: 20 * time.Second}, `"s-0";r=2;t=20`, "", ""},
		{"binding second limit", rl, hybrid.Result{Allowed: true, Binding: 1, Remaining: 7}, `"s-1";r=7;t=36`, "", ""},
		{"binding out of range", rl, hybrid.Result{Allowed: true, Binding: 9, Remaining: 1}, `"s-0";r=1;t=20`, "", ""},
		{"denied", rl, hybrid.Result{RetryAfter: 1500 * time.Millisecond, Remaining: 5}, `"s-0";r=0;t=2`, `Too many requests under rule "s"; retry in 2 seconds.`, `Too many requests under rule "s"; retry in 1.5s.`},
		{"denied below a second", rl, hybrid.Result{RetryAfter: time.Millisecond}, `"s-0";r=0;t=1`, `Too many requests under rule "s"; retry in 1 second.`, `Too many requests under rule "s"; retry in 1ms.`},
		{"denied below a millisecond", rl, hybrid.Result{RetryAfter: 300 * time.Microsecond}, `"s-0";r=0;t=1`, `Too many requests under rule "s"; retry in 1 second.`, `Too many requests under rule "s"; retry in 1ms.`},
		{"denied, rounded up to the millisecond", rl, hybrid.Result{RetryAfter: 1001 * time.Microsecond}, `"s-0";r=0;t=1`, `Too many requests under rule "s"; retry in 1 second.`, `Too many requests under rule "s"; retry in 2ms.`},
		{"delay above max", rl, hybrid.Result{Allowed: true, Delay: 2 * time.Second}, `"s-0";r=0;t=2`, `Too many requests under rule "s"; retry in 2 seconds.`, `Too many requests under rule "s"; retry in 1.9s.`},
		{"fixed window: to its end", fixed, hybrid.Result{Allowed: true, Remaining: 4, ResetAfter: 12300 * time.Millisecond}, `"f";r=4;t=13`, "", ""},
		{"fail open", rl, hybrid.Result{Allowed: true, Source: hybrid.SourceFailOpen}, "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tt.rl.Decide(tt.res)
			got, ok := tt.rl.RateLimit(tt.res, d)
			if got != tt.rateLimit || ok != (tt.rateLimit != "") {
				t.Errorf("RateLimit = %q, %v; want %q", got, ok, tt.rateLimit)
			}
			if !d.Allowed {
				if got := tt.rl.Detail(d); got != tt.detail {
					t.Errorf("Detail = %q, want %q", got, tt.detail)
				}
				if got := tt.rl.DetailMillis(d); got != tt.millis {
					t.Errorf("DetailMillis = %q, want %q", got, tt.millis)
				}
			} else if tt.detail != "" {
				t.Errorf("Decide(%+v) allowed, want a denial", tt.res)
			}
		})
	}
	if pol != `"s-0";q=3;w=60, "s-1";q=100;w=3600` {
		t.Errorf("policy = %q", pol)
	}
}

func TestFormatMillis(t *testing.T) {
	tests := []struct {
		ms   int64
		want string
	}{
		{1, "1ms"},
		{2, "2ms"},
		{999, "999ms"},
		{1000, "1s"},
		{1001, "1.001s"},
		{1010, "1.01s"},
		{1500, "1.5s"},
		{12345, "12.345s"},
		{12000, "12s"},
		{59999, "59.999s"},
		{1800000, "1800s"},
	}
	for _, tt := range tests {
		if got := FormatMillis(tt.ms); got != tt.want {
			t.Errorf("FormatMillis(%d) = %q, want %q", tt.ms, got, tt.want)
		}
	}
}

// TestRetryMillis: a denial's retry in milliseconds is rounded up, never
// 0, and never rounded to seconds.
func TestRetryMillis(t *testing.T) {
	tests := []struct {
		retry time.Duration
		want  int64
	}{
		{0, 1},
		{-time.Second, 1},
		{time.Nanosecond, 1},
		{300 * time.Microsecond, 1},
		{time.Millisecond, 1},
		{time.Millisecond + time.Nanosecond, 2},
		{1500 * time.Millisecond, 1500},
		{30 * time.Minute, 1800000},
	}
	for _, tt := range tests {
		if got := (Decision{Retry: tt.retry}).RetryMillis(); got != tt.want {
			t.Errorf("RetryMillis(%v) = %d, want %d", tt.retry, got, tt.want)
		}
	}
}
