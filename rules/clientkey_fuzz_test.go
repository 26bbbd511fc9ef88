package rules

import (
	"net/http"
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
	resolvers := []headerResolver{newHeaderResolver(trusted, "X-Forwarded-For"), newHeaderResolver(trusted, "Forwarded")}
	f.Fuzz(func(t *testing.T, remote, xff, fwd string) {
		header := http.Header{"X-Forwarded-For": {xff}, "Forwarded": {fwd}}
		peer, peerOK := parseHost(remote)
		for _, p := range resolvers {
			a, ok := p.fromHeader(remote, header)
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
			keys := Keys{resolver: p.resolver, v4: 32, v6: 64}
			if k := keys.ipKey(remote, header[p.header]); k == "" || len(k) > 64 {
				t.Fatalf("ipKey = %q", k)
			}
		}
	})
}
