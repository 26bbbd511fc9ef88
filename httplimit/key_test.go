package httplimit

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hybridlimit/hybridlimit/hybrid"
)

func TestKey(t *testing.T) {
	lim, _ := newMini(t)
	user := func(r *http.Request) (string, bool) {
		u := r.Header.Get("Test-User")
		return u, u != ""
	}
	rules := func(k KeySource) RuleSet {
		return RuleSet{Default: &Rule{Name: "r", Key: k, Limits: []hybrid.Limit{hybrid.PerMinute(1)}}}
	}
	const apiHash = "http:r:key:2bb80d537b1da3e38bd30361aa855686" // SHA-256("secret")[:16]
	tests := []struct {
		name   string
		cfg    Config
		header []string
		want   string
	}{
		{"api key first", Config{Rules: rules(0), User: user}, []string{"X-API-Key", "secret", "Test-User", "alice"}, apiHash},
		{"api key trimmed", Config{Rules: rules(0)}, []string{"X-API-Key", "  secret "}, apiHash},
		{"custom api key header", Config{Rules: rules(0), APIKeyHeader: "authorization-key"}, []string{"Authorization-Key", "secret"}, apiHash},
		{"rejected api key", Config{Rules: rules(0), User: user, VerifyAPIKey: func(k string) bool { return k == "good" }}, []string{"X-API-Key", "secret", "Test-User", "alice"}, "http:r:user:alice"},
		{"verified api key", Config{Rules: rules(0), VerifyAPIKey: func(k string) bool { return k == "secret" }}, []string{"X-API-Key", "secret"}, apiHash},
		{"empty api key", Config{Rules: rules(0)}, []string{"X-API-Key", " "}, "http:r:ip:198.51.100.1"},
		{"user", Config{Rules: rules(0), User: user}, []string{"Test-User", "alice"}, "http:r:user:alice"},
		{"unusual user hashed", Config{Rules: rules(0), User: user}, []string{"Test-User", "a{b}"}, "http:r:userh:" + digest("a{b}")},
		{"long user hashed", Config{Rules: rules(0), User: user}, []string{"Test-User", strings.Repeat("u", 65)}, "http:r:userh:" + digest(strings.Repeat("u", 65))},
		{"no identity", Config{Rules: rules(0), User: user}, nil, "http:r:ip:198.51.100.1"},
		{"ip only ignores api key", Config{Rules: rules(KeyIP), User: user}, []string{"X-API-Key", "secret", "Test-User", "alice"}, "http:r:ip:198.51.100.1"},
		{"user only ignores api key", Config{Rules: rules(KeyUser), User: user}, []string{"X-API-Key", "secret", "Test-User", "alice"}, "http:r:user:alice"},
		{"api key only falls back to ip", Config{Rules: rules(KeyAPIKey), User: user}, []string{"Test-User", "alice"}, "http:r:ip:198.51.100.1"},
		{"user without User func", Config{Rules: rules(KeyUser)}, []string{"Test-User", "alice"}, "http:r:ip:198.51.100.1"},
		{"IPv6 /64", Config{Rules: rules(KeyIP)}, []string{"RemoteAddr", "[2001:db8:1:2:3:4:5:6]:80"}, "http:r:ip:2001:db8:1:2::/64"},
		{"IPv6 /48", Config{Rules: rules(KeyIP), IPv6Prefix: 48}, []string{"RemoteAddr", "[2001:db8:1:2:3:4:5:6]:80"}, "http:r:ip:2001:db8:1::/48"},
		{"IPv6 /128", Config{Rules: rules(KeyIP), IPv6Prefix: 128}, []string{"RemoteAddr", "[2001:db8:1:2:3:4:5:6]:80"}, "http:r:ip:2001:db8:1:2:3:4:5:6"},
		{"IPv4 /24", Config{Rules: rules(KeyIP), IPv4Prefix: 24}, []string{"RemoteAddr", "203.0.113.7:80"}, "http:r:ip:203.0.113.0/24"},
		{"IPv4-mapped keyed as IPv4", Config{Rules: rules(KeyIP)}, []string{"RemoteAddr", "[::ffff:203.0.113.7]:80"}, "http:r:ip:203.0.113.7"},
		{"unknown peer", Config{Rules: rules(KeyIP)}, []string{"RemoteAddr", "@"}, "http:r:ip:unknown"},
		{"forwarded client", Config{Rules: rules(KeyIP), TrustedProxies: []string{"10.0.0.0/8"}}, []string{"RemoteAddr", "10.0.0.1:80", "X-Forwarded-For", "1.1.1.1, 203.0.113.7"}, "http:r:ip:203.0.113.7"},
		{"custom prefix", Config{Rules: rules(KeyIP), Prefix: "app1/"}, nil, "app1/r:ip:198.51.100.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mw := newMiddleware(t, lim, tt.cfg)
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = "198.51.100.1:5000"
			for i := 0; i < len(tt.header); i += 2 {
				if tt.header[i] == "RemoteAddr" {
					r.RemoteAddr = tt.header[i+1]
				} else {
					r.Header.Set(tt.header[i], tt.header[i+1])
				}
			}
			rl := match(mw.eng.Rules(), r, "")
			if got := mw.key(r, rl); got != tt.want {
				t.Errorf("key = %q, want %q", got, tt.want)
			}
		})
	}
}
