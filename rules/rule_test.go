package rules

import (
	"strings"
	"testing"
	"time"

	"github.com/hybridlimit/hybridlimit/hybrid"
)

func TestPolicy(t *testing.T) {
	tests := []struct {
		rule  Rule
		names string
		field string
	}{
		{Rule{Name: "default", Limits: []hybrid.Limit{hybrid.PerMinute(100)}}, "default", `"default";q=100;w=60`},
		{Rule{Name: "s", Limits: []hybrid.Limit{hybrid.PerSecond(10), hybrid.PerHour(1000)}}, "s-0 s-1", `"s-0";q=10;w=1, "s-1";q=1000;w=3600`},
		{Rule{Name: "sub", Limits: []hybrid.Limit{{Rate: 5, Period: 1500 * time.Millisecond}}}, "sub", `"sub";q=5;w=2`},
		{Rule{Name: "tiny", Limits: []hybrid.Limit{{Rate: 5, Period: time.Millisecond}}}, "tiny", `"tiny";q=5;w=1`},
	}
	for _, tt := range tests {
		names, field := policy(tt.rule)
		if strings.Join(names, " ") != tt.names || field != tt.field {
			t.Errorf("policy(%v) = %q, %q; want %q, %q", tt.rule.Limits, names, field, tt.names, tt.field)
		}
	}
}

// TestBurstFor: the burst it suggests has a longest delay within d, and
// one more unit's has not.
func TestBurstFor(t *testing.T) {
	leaky := hybrid.Limit{Algorithm: hybrid.LeakyBucket, Rate: 10, Period: time.Second, Burst: 21}
	if b := burstFor(leaky, 1500*time.Millisecond); b != 16 {
		t.Errorf("burstFor(%v, 1.5s) = %d, want 16", leaky, b)
	}
	for _, burst := range []int64{16, 17} {
		l := leaky
		l.Burst = burst
		if fits := l.LongestDelay() <= 1500*time.Millisecond; fits != (burst == 16) {
			t.Errorf("burst %d: LongestDelay %v, fits in 1.5s: %v", burst, l.LongestDelay(), fits)
		}
	}
}
