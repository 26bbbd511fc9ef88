package grpclimit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hybridlimit/hybridlimit/hybrid"
)

var perMin = []hybrid.Limit{hybrid.PerMinute(10)}

const fullYAML = `
rules:
  - name: search
    method: /shop.Catalog/Search
    key: [api-key, user, ip]
    limits:
      - {rate: 5, period: 1m}
  - name: catalog
    method: /shop.Catalog/*
    limits:
      - {rate: 100, period: 1s, burst: 200}
      - {rate: 10000, period: 1h, algorithm: sliding-window-counter, name: hourly}
  - name: upload
    method: /shop.Files/Upload
    key: user
    per_message: true
    limits:
      - {algorithm: leaky-bucket, rate: 2, period: 1s, burst: 3}
    max_delay: 2s
  - name: trial
    method: /shop.V2/*
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
			{Name: "search", Method: "/shop.Catalog/Search", Key: KeyAPIKey | KeyUser | KeyIP, Limits: []hybrid.Limit{hybrid.PerMinute(5)}},
			{Name: "catalog", Method: "/shop.Catalog/*", Limits: []hybrid.Limit{
				{Rate: 100, Period: time.Second, Burst: 200},
				{Algorithm: hybrid.SlidingWindowCounter, Rate: 10000, Period: time.Hour, Name: "hourly"},
			}},
			{Name: "upload", Method: "/shop.Files/Upload", Key: KeyUser, PerMessage: true, MaxDelay: 2 * time.Second, Limits: []hybrid.Limit{
				{Algorithm: hybrid.LeakyBucket, Rate: 2, Period: time.Second, Burst: 3},
			}},
			{Name: "trial", Method: "/shop.V2/*", Shadow: true, Limits: []hybrid.Limit{{Algorithm: hybrid.FixedWindow, Rate: 10, Period: time.Second}}},
			{Name: "free", Tier: "free", Limits: []hybrid.Limit{{Algorithm: hybrid.SlidingWindowLog, Rate: 30, Period: time.Minute}}},
		},
		Default: &Rule{Limits: []hybrid.Limit{hybrid.PerMinute(600)}},
	}
	if !got.shared().Normalized().Equal(want.shared().Normalized()) {
		t.Errorf("ParseRules =\n%+v\nwant\n%+v", got, want)
	}
}

func TestParseRulesErrors(t *testing.T) {
	rule := func(body string) string { return "rules:\n  - name: a\n    method: /s.S/M\n" + body }
	limits := "    limits: [{rate: 1, period: 1s}]\n"
	tests := []struct {
		name, yaml, want string
	}{
		{"empty file", "", "no rules"},
		{"route is httplimit's", "rules:\n  - name: a\n    route: /a\n" + limits, `unknown field "route"`},
		{"unknown rule field", rule(limits + "    burts: 5\n"), `unknown field "burts"`},
		{"duplicate field", rule(limits + "    method: /s.S/N\n"), "already defined"},
		{"per_message not a bool", rule(limits + "    per_message: often\n"), "invalid"},
		{"missing period", rule("    limits: [{rate: 1}]\n"), "period is required"},
		{"zero rate", rule("    limits: [{rate: 0, period: 1s}]\n"), "rate 0"},
		{"unknown key", rule(limits + "    key: [peer]\n"), `unknown source "peer"`},
		{"no limits", rule(""), "0 limits"},
		{"method without slash", "rules:\n  - name: a\n    method: s.S/M\n" + limits, `method "s.S/M"`},
		{"duplicate rule", rule(limits) + "  - name: a\n    method: /s.S/N\n" + limits, "given twice"},
		{"bad default", "default:\n  method: /s.S/*\n" + limits[2:], "method or a tier"},
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

func TestValidate(t *testing.T) {
	l := perMin
	tests := []struct {
		name string
		rs   RuleSet
		want string // part of the error; "" for valid
	}{
		{"empty set", RuleSet{}, ""},
		{"method and its service", RuleSet{Rules: []Rule{{Name: "a", Method: "/s.S/M", Limits: l}, {Name: "b", Method: "/s.S/*", Limits: l}}}, ""},
		{"tier overrides the same method", RuleSet{Rules: []Rule{{Name: "a", Method: "/s.S/M", Limits: l}, {Name: "b", Method: "/s.S/M", Tier: "pro", Limits: l}}}, ""},
		{"same method twice", RuleSet{Rules: []Rule{{Name: "a", Method: "/s.S/M", Limits: l}, {Name: "b", Method: "/s.S/M", Limits: l}}}, `method "/s.S/M" of rule "b" is also the method of rule "a"`},
		{"same service twice in a tier", RuleSet{Rules: []Rule{{Name: "a", Method: "/s.S/*", Tier: "t", Limits: l}, {Name: "b", Method: "/s.S/*", Tier: "t", Limits: l}}}, "is also the method"},
		{"no leading slash", RuleSet{Rules: []Rule{{Name: "a", Method: "s.S/M", Limits: l}}}, `method "s.S/M"`},
		{"no method", RuleSet{Rules: []Rule{{Name: "a", Method: "/s.S/", Limits: l}}}, "method name"},
		{"no service", RuleSet{Rules: []Rule{{Name: "a", Method: "//M", Limits: l}}}, "service name"},
		{"three parts", RuleSet{Rules: []Rule{{Name: "a", Method: "/s.S/M/x", Limits: l}}}, "method name"},
		{"wildcard service", RuleSet{Rules: []Rule{{Name: "a", Method: "/*/M", Limits: l}}}, "service name"},
		{"partial wildcard", RuleSet{Rules: []Rule{{Name: "a", Method: "/s.S/Get*", Limits: l}}}, "method name"},
		{"space", RuleSet{Rules: []Rule{{Name: "a", Method: "/s.S/M x", Limits: l}}}, "space"},
		{"neither method nor tier", RuleSet{Rules: []Rule{{Name: "a", Limits: l}}}, "neither method nor tier"},
		{"default with method", RuleSet{Default: &Rule{Method: "/s.S/*", Limits: l}}, "has a method or a tier"},
		{"bad name", RuleSet{Rules: []Rule{{Name: "a b", Method: "/s.S/M", Limits: l}}}, "only letters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.rs.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidRules) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want ErrInvalidRules containing %q", err, tt.want)
			}
		})
	}
}

func TestMatch(t *testing.T) {
	rs := RuleSet{
		Rules: []Rule{
			{Name: "check", Method: mCheck, Limits: perMin},
			{Name: "health", Method: "/grpc.health.v1.Health/*", Limits: perMin},
			{Name: "check-pro", Method: mCheck, Tier: "pro", Limits: perMin},
			{Name: "pro-all", Tier: "pro", Limits: perMin},
			{Name: "echo-free", Method: "/test.Echo/*", Tier: "free", Limits: perMin},
		},
		Default: &Rule{Limits: perMin},
	}
	s, _, err := dialect.Compile(rs.shared(), DefaultPrefix, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		method, tier, want string // want "" for no rule
	}{
		{mCheck, "", "check"},
		{mWatch, "", "health"},
		{mCheck, "pro", "check-pro"},
		{mWatch, "pro", "health"}, // a service rule beats the tier's catch-all
		{mSay, "pro", "pro-all"},
		{mSay, "free", "echo-free"},
		{mCheck, "free", "check"},
		{mSay, "", "default"},
		{mSay, "gold", "default"},
		{"/grpc.health.v1.Health", "", "default"}, // not a full method
		{"/grpc.health.v1.HealthX/Check", "", "default"},
	}
	for _, tt := range tests {
		got := ""
		if rl := match(s, tt.method, tt.tier); rl != nil {
			got = rl.Name
		}
		if got != tt.want {
			t.Errorf("match(%s, tier %q) = %q, want %q", tt.method, tt.tier, got, tt.want)
		}
	}
	s, _, err = dialect.Compile(RuleSet{Rules: rs.Rules}.shared(), DefaultPrefix, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rl := match(s, mSay, ""); rl != nil {
		t.Errorf("match without default = %q, want none", rl.Name)
	}
}

func TestKeySourceString(t *testing.T) {
	if got := (KeyAPIKey | KeyIP).String(); got != "api-key|ip" {
		t.Errorf("String() = %q, want api-key|ip", got)
	}
	if got := KeySource(0).String(); got != "api-key|user|ip" {
		t.Errorf("String() = %q, want api-key|user|ip", got)
	}
}
