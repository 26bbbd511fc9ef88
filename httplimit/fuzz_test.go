package httplimit

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// FuzzClientIP checks the client-IP parser on any RemoteAddr and forwarding
// headers: it never panics; a result is one canonical address (unmapped,
// without zone, not unspecified); a peer that is not a trusted proxy is
// the client whatever the headers say; and the key is never empty.
func FuzzClientIP(f *testing.F) {
	seeds := [][3]string{
		{"198.51.100.1:5000", "1.1.1.1", "for=1.1.1.1"},
		{"10.0.0.1:443", "1.1.1.1, 203.0.113.7", ""},
		{"10.0.0.1:443", "203.0.113.7, 10.0.0.2, 10.0.0.3", ""},
		{"10.0.0.1:443", "10.0.0.2, 10.0.0.3", ""},
		{"10.0.0.1:443", "garbage, 203.0.113.7, bogus", ""},
		{"10.0.0.1:443", "::ffff:203.0.113.7, [2001:db8::7]:4711, fe80::1%eth0", ""},
		{"10.0.0.1:443", "203.0.113.7:4711,,", ""},
		{"10.0.0.1:443", "0x7f.0.0.1, 2130706433, 017.0.0.1, 127.1", ""},
		{"10.0.0.1:443", "", `for="[2001:db8:cafe::17]:4711", for=unknown, for=_hidden`},
		{"10.0.0.1:443", "", `for="1.1.1.1, for=203.0.113.7;proto=https`},
		{"10.0.0.1:443", "", `for="203.0.113\.7";for=1.2.3.4, For="_gazonk"`},
		{"[::ffff:10.0.0.1]:80", "\"203.0.113.7\"", "for=\"\\\""},
		{"[fe80::1%eth0]:80", "[", "for=["},
		{"", "", ""},
		{"@", "1.1.1.1", ""},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1], s[2])
	}
	trusted := mustTrusted(f, trustedForTests...)
	resolvers := []resolver{newResolver(trusted, "X-Forwarded-For"), newResolver(trusted, "Forwarded")}
	mws := make([]*Middleware, len(resolvers))
	for i, r := range resolvers {
		mws[i] = &Middleware{cfg: Config{IPv4Prefix: 32, IPv6Prefix: 64}, ip: r}
	}
	f.Fuzz(func(t *testing.T, remote, xff, fwd string) {
		header := http.Header{"X-Forwarded-For": {xff}, "Forwarded": {fwd}}
		peer, peerOK := parseHost(remote)
		for i, p := range resolvers {
			a, ok := p.clientIP(remote, header)
			if ok != peerOK {
				t.Fatalf("clientIP(%q) ok = %v, but the peer parses: %v", remote, ok, peerOK)
			}
			if !ok {
				continue
			}
			if !a.IsValid() || a.Zone() != "" || a.Is4In6() || a.IsUnspecified() {
				t.Fatalf("clientIP(%q, %q, %q) = %v: not canonical", remote, xff, fwd, a)
			}
			if !p.isTrusted(peer) && a != peer {
				t.Fatalf("clientIP(%q, %q, %q) = %v from an untrusted peer %v", remote, xff, fwd, a, peer)
			}
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr, r.Header = remote, header
			if k := mws[i].ipKey(r); k == "" || len(k) > 64 {
				t.Fatalf("ipKey = %q", k)
			}
		}
	})
}

// FuzzParseRules checks that no rules file panics the parser, and that a
// file it accepts can be put in force.
func FuzzParseRules(f *testing.F) {
	f.Add([]byte(fullYAML))
	f.Add([]byte(rulesV1))
	f.Add([]byte("rules:\n  - {name: a, route: /a/{x}, tier: t, key: [user], limits: [{rate: 1, period: 1s}], max_delay: 1s, shadow: true}\n"))
	f.Add([]byte("default: {limits: [{algorithm: leaky-bucket, rate: 3, period: 1s, burst: 9}]}\n"))
	f.Add([]byte("rules: &a [*a]\n"))
	f.Add([]byte("rules:\n  - name: a\n    route: \"GET /{$}\"\n    limits: [{rate: 1, period: 1h}]\n"))
	f.Add([]byte("{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, err := ParseRules(data)
		if err != nil {
			return
		}
		if _, _, err := compile(rs, DefaultPrefix, nil); err != nil {
			t.Fatalf("ParseRules accepted a set compile refuses: %v", err)
		}
	})
}
