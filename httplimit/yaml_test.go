package httplimit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hybridlimit/hybridlimit/hybrid"
)

const fullYAML = `
# Every field.
rules:
  - name: login
    route: "POST /login"
    key: ip
    limits:
      - rate: 5
        period: 1m
  - name: search-pro
    route: GET /search
    tier: pro
    key: [api-key, user, ip]
    limits:
      - {rate: 100, period: 1s, burst: 200}
      - {rate: 10000, period: 1h, algorithm: sliding-window-counter, name: hourly}
  - name: upload
    route: POST /upload/{name...}
    key: [user]
    limits:
      - {algorithm: leaky-bucket, rate: 2, period: 1s, burst: 4}
    max_delay: 2s
  - name: v2-trial
    route: /v2/
    shadow: true
    limits:
      - {algorithm: FixedWindow, rate: 10, period: 1s}
  - name: free
    tier: free
    limits:
      - {algorithm: sliding-window-log, rate: 30, period: 1m}
default:
  limits:
    - {rate: 600, period: 1m}
`

func TestParseRules(t *testing.T) {
	got, err := ParseRules([]byte(fullYAML))
	if err != nil {
		t.Fatal(err)
	}
	want := RuleSet{
		Rules: []Rule{
			{Name: "login", Route: "POST /login", Key: KeyIP, Limits: []hybrid.Limit{hybrid.PerMinute(5)}},
			{Name: "search-pro", Route: "GET /search", Tier: "pro", Limits: []hybrid.Limit{
				{Rate: 100, Period: time.Second, Burst: 200},
				{Algorithm: hybrid.SlidingWindowCounter, Rate: 10000, Period: time.Hour, Name: "hourly"},
			}},
			{Name: "upload", Route: "POST /upload/{name...}", Key: KeyUser, MaxDelay: 2 * time.Second, Limits: []hybrid.Limit{
				{Algorithm: hybrid.LeakyBucket, Rate: 2, Period: time.Second, Burst: 4},
			}},
			{Name: "v2-trial", Route: "/v2/", Shadow: true, Limits: []hybrid.Limit{{Algorithm: hybrid.FixedWindow, Rate: 10, Period: time.Second}}},
			{Name: "free", Tier: "free", Limits: []hybrid.Limit{{Algorithm: hybrid.SlidingWindowLog, Rate: 30, Period: time.Minute}}},
		},
		Default: &Rule{Limits: []hybrid.Limit{hybrid.PerMinute(600)}},
	}
	if !got.shared().Normalized().Equal(want.shared().Normalized()) {
		t.Errorf("ParseRules =\n%+v\nwant\n%+v", got, want)
	}
	if got.Default.Name != "" {
		t.Errorf("Default.Name = %q, want it left for the default", got.Default.Name)
	}
}

func TestParseRulesErrors(t *testing.T) {
	rule := func(body string) string { return "rules:\n  - name: a\n    route: /a\n" + body }
	limits := "    limits: [{rate: 1, period: 1s}]\n"
	tests := []struct {
		name, yaml, want string
	}{
		{"empty file", "", "no rules"},
		{"comments only", "# nothing\n", "no rules"},
		{"empty rules", "rules: []\n", "no rules"},
		{"not YAML", "rules: [\n", "invalid"},
		{"tab indentation", "rules:\n\t- name: a\n", "invalid"},
		{"not a list", "rules: 5\n", "invalid"},
		{"unknown top-level field", "rulez: []\n", `unknown field "rulez"`},
		{"unknown rule field", rule(limits + "    burts: 5\n"), `unknown field "burts"`},
		{"unknown limit field", rule("    limits: [{rate: 1, period: 1s, burts: 2}]\n"), `unknown field "burts"`},
		{"duplicate field", rule(limits + "    route: /b\n"), "already defined"},
		{"missing period", rule("    limits: [{rate: 1}]\n"), "period is required"},
		{"bad period", rule("    limits: [{rate: 1, period: 1 minute}]\n"), "period"},
		{"negative period", rule("    limits: [{rate: 1, period: -1s}]\n"), "period"},
		{"zero rate", rule("    limits: [{rate: 0, period: 1s}]\n"), "rate 0"},
		{"rate not a number", rule("    limits: [{rate: many, period: 1s}]\n"), "invalid"},
		{"unknown algorithm", rule("    limits: [{algorithm: gcra, rate: 1, period: 1s}]\n"), `unknown algorithm "gcra"`},
		{"burst for a window", rule("    limits: [{algorithm: fixed-window, rate: 1, period: 1s, burst: 5}]\n"), "burst"},
		{"no limits", rule(""), "0 limits"},
		{"unknown key", rule(limits + "    key: [ipv4]\n"), `unknown source "ipv4"`},
		{"key not a name", rule(limits + "    key: 5\n"), "key"},
		{"empty key list", rule(limits + "    key: []\n"), "empty list"},
		{"bad max delay", rule(limits + "    max_delay: soon\n"), "max_delay"},
		{"negative max delay", rule(limits + "    max_delay: -1s\n"), "max_delay"},
		{"duplicate rule", rule(limits) + "  - name: a\n    route: /b\n" + limits, "given twice"},
		{"bad route", "rules:\n  - name: a\n    route: /{\n" + limits, "route"},
		{"bad default", "default:\n  route: /\n" + limits[2:], "route or a tier"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseRules([]byte(tt.yaml))
			if !errors.Is(err, ErrInvalidRules) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ParseRules(%q) = %v, want ErrInvalidRules containing %q", tt.yaml, err, tt.want)
			}
		})
	}
}

func TestLoadRules(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(path, []byte(fullYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadRules(path); err != nil {
		t.Fatalf("LoadRules = %v", err)
	}
	if _, err := LoadRules(filepath.Join(dir, "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadRules(missing) = %v, want ErrNotExist", err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("#"+strings.Repeat("x", MaxRulesFileSize)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadRules(big); !errors.Is(err, ErrInvalidRules) {
		t.Errorf("LoadRules(big) = %v, want ErrInvalidRules", err)
	}
}
