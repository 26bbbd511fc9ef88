package httplimit

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hybridlimit/hybridlimit/hybrid"
)

var perMin = []hybrid.Limit{hybrid.PerMinute(10)}

func TestMatch(t *testing.T) {
	rs := RuleSet{
		Rules: []Rule{
			{Name: "items-get", Route: "GET /items/{id}", Limits: perMin},
			{Name: "items-any", Route: "/items/", Limits: perMin},
			{Name: "host", Route: "api.example.com/", Limits: perMin},
			{Name: "root", Route: "/{$}", Limits: perMin},
			{Name: "items-pro", Route: "GET /items/{x}", Tier: "pro", Limits: perMin},
			{Name: "pro-all", Tier: "pro", Limits: perMin},
			{Name: "free-all", Tier: "free", Limits: perMin},
			{Name: "search-free", Route: "GET /search", Tier: "free", Limits: perMin},
		},
		Default: &Rule{Limits: perMin},
	}
	s, _, err := compile(rs, DefaultPrefix, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		method, target, tier string
		want                 string // "" for no rule
	}{
		{"GET", "/items/1", "", "items-get"},
		{"HEAD", "/items/1", "", "items-get"},
		{"POST", "/items/1", "", "items-any"},
		{"GET", "/items/1/2", "", "items-any"},
		{"GET", "/items/1", "pro", "items-pro"},
		{"POST", "/items/1", "pro", "items-any"}, // a route beats the tier's catch-all
		{"GET", "/other", "pro", "pro-all"},
		{"GET", "/other", "free", "free-all"},
		{"GET", "/search", "free", "search-free"},
		{"GET", "/search", "", "default"},
		{"GET", "/other", "gold", "default"},
		{"GET", "/other", "", "default"},
		{"GET", "http://api.example.com/other", "", "host"},
		{"GET", "http://api.example.com:8080/other", "", "host"},
		{"GET", "http://api.example.com/items/1", "", "host"}, // a host pattern wins over one without
		{"GET", "/", "", "root"},
		{"GET", "/items", "", "items-any"},               // redirected to /items/
		{"GET", "/x/../items/1", "", "items-get"},        // cleaned
		{"GET", "//items/1", "", "items-get"},            // cleaned
		{"GET", "/items/%2e%2e/search", "", "items-any"}, // escaped dots are not cleaned: three segments
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.target+" "+tt.tier, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, tt.target, nil)
			got := ""
			if rl := match(s, r, tt.tier); rl != nil {
				got = rl.Name
			}
			if got != tt.want {
				t.Errorf("match(%s %s, tier %q) = %q, want %q", tt.method, tt.target, tt.tier, got, tt.want)
			}
		})
	}

	t.Run("no default", func(t *testing.T) {
		s, _, err := compile(RuleSet{Rules: rs.Rules}, DefaultPrefix, nil)
		if err != nil {
			t.Fatal(err)
		}
		if rl := match(s, httptest.NewRequest("GET", "/other", nil), ""); rl != nil {
			t.Errorf("match = %q, want none", rl.Name)
		}
	})
}

func TestValidate(t *testing.T) {
	l := perMin
	many := make([]hybrid.Limit, 17)
	for i := range many {
		many[i] = hybrid.PerSecond(int64(i + 1))
	}
	tests := []struct {
		name string
		rs   RuleSet
		want string // part of the error; "" for valid
	}{
		{"empty set", RuleSet{}, ""},
		{"default only", RuleSet{Default: &Rule{Limits: l}}, ""},
		{"tier overrides equivalent route", RuleSet{Rules: []Rule{
			{Name: "a", Route: "GET /a/{x}", Limits: l},
			{Name: "b", Route: "GET /a/{y}", Tier: "pro", Limits: l},
		}}, ""},
		{"no name", RuleSet{Rules: []Rule{{Route: "/", Limits: l}}}, "rule 1: name"},
		{"bad name", RuleSet{Rules: []Rule{{Name: "a b", Route: "/", Limits: l}}}, "only letters"},
		{"name with colon", RuleSet{Rules: []Rule{{Name: "a:b", Route: "/", Limits: l}}}, "only letters"},
		{"long name", RuleSet{Rules: []Rule{{Name: strings.Repeat("n", 65), Route: "/", Limits: l}}}, "1 to 64 bytes"},
		{"duplicate name", RuleSet{Rules: []Rule{{Name: "a", Route: "/a", Limits: l}, {Name: "a", Route: "/b", Limits: l}}}, `"a" given twice`},
		{"rule named like the default", RuleSet{Rules: []Rule{{Name: "default", Route: "/a", Limits: l}}, Default: &Rule{Limits: l}}, `"default" given twice`},
		{"malformed route", RuleSet{Rules: []Rule{{Name: "a", Route: "/items/{id", Limits: l}}}, `route "/items/{id"`},
		{"route without slash", RuleSet{Rules: []Rule{{Name: "a", Route: "GET", Limits: l}}}, `route "GET"`},
		{"conflicting routes", RuleSet{Rules: []Rule{{Name: "a", Route: "/a/{x}", Limits: l}, {Name: "b", Route: "/{y}/b", Limits: l}}}, `route "/{y}/b" of rule "b" conflicts with route "/a/{x}" of rule "a"`},
		{"equivalent routes", RuleSet{Rules: []Rule{{Name: "a", Route: "/a/{x}", Limits: l}, {Name: "b", Route: "/a/{y}", Limits: l}}}, "conflicts"},
		{"equivalent routes in one tier", RuleSet{Rules: []Rule{{Name: "a", Route: "/a/{x}", Tier: "t", Limits: l}, {Name: "b", Route: "/a/{y}", Tier: "t", Limits: l}}}, "conflicts"},
		{"tier route conflicts with generic", RuleSet{Rules: []Rule{{Name: "a", Route: "/a/{x}", Limits: l}, {Name: "b", Route: "/{y}/b", Tier: "t", Limits: l}}}, "conflicts"},
		{"no limits", RuleSet{Rules: []Rule{{Name: "a", Route: "/"}}}, "0 limits"},
		{"too many limits", RuleSet{Rules: []Rule{{Name: "a", Route: "/", Limits: many}}}, "17 limits"},
		{"invalid limit", RuleSet{Rules: []Rule{{Name: "a", Route: "/", Limits: []hybrid.Limit{{Rate: 0, Period: time.Second}}}}}, "limit 1"},
		{"limit twice", RuleSet{Rules: []Rule{{Name: "a", Route: "/", Limits: []hybrid.Limit{hybrid.PerSecond(10), {Rate: 10, Period: time.Second, Burst: 10}}}}}, "given twice"},
		{"unknown key source", RuleSet{Rules: []Rule{{Name: "a", Route: "/", Key: 8, Limits: l}}}, "unknown key source"},
		{"negative max delay", RuleSet{Rules: []Rule{{Name: "a", Route: "/", MaxDelay: -time.Second, Limits: l}}}, "negative max delay"},
		{"neither route nor tier", RuleSet{Rules: []Rule{{Name: "a", Limits: l}}}, "make it the default"},
		{"two catch-alls for a tier", RuleSet{Rules: []Rule{{Name: "a", Tier: "t", Limits: l}, {Name: "b", Tier: "t", Limits: l}}}, `both match every route of tier "t"`},
		{"default with route", RuleSet{Default: &Rule{Route: "/", Limits: l}}, "has a route or a tier"},
		{"default with tier", RuleSet{Default: &Rule{Tier: "t", Limits: l}}, "has a route or a tier"},
		{"default without limits", RuleSet{Default: &Rule{}}, `rule "default": 0 limits`},
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

func TestLeakyBucketWarning(t *testing.T) {
	leaky := hybrid.Limit{Algorithm: hybrid.LeakyBucket, Rate: 10, Period: time.Second, Burst: 21}
	tests := []struct {
		name     string
		maxDelay time.Duration
		shadow   bool
		warn     bool
	}{
		{"queue fits", 2 * time.Second, false, false},
		{"queue fits the default", 0, false, true},
		{"queue outlasts", 1500 * time.Millisecond, false, true},
		{"shadow never delays", time.Millisecond, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, w, err := compile(RuleSet{Rules: []Rule{{Name: "q", Route: "/", Limits: []hybrid.Limit{leaky}, MaxDelay: tt.maxDelay, Shadow: tt.shadow}}}, DefaultPrefix, nil)
			if err != nil {
				t.Fatal(err)
			}
			if (len(w) > 0) != tt.warn {
				t.Fatalf("warnings = %q, want some: %v", w, tt.warn)
			}
		})
	}
}

func TestKeySourceString(t *testing.T) {
	tests := []struct {
		k    KeySource
		want string
	}{
		{KeyAPIKey | KeyUser | KeyIP, "api-key|user|ip"},
		{0, "api-key|user|ip"},
		{KeyIP | KeyAPIKey, "api-key|ip"},
		{KeyUser, "user"},
		{KeyUser | 16, "user|KeySource(0x10)"},
	}
	for _, tt := range tests {
		if got := tt.k.String(); got != tt.want {
			t.Errorf("KeySource(%d).String() = %q, want %q", uint8(tt.k), got, tt.want)
		}
	}
}
