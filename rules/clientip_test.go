package rules

import (
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
)

func mustTrusted(t testing.TB, list ...string) []netip.Prefix {
	t.Helper()
	p, err := parseTrusted(list)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// headerResolver reads the forwarding header of an HTTP request, as
// httplimit does.
type headerResolver struct {
	resolver
	header string
}

func newHeaderResolver(trusted []netip.Prefix, header string) headerResolver {
	return headerResolver{newResolver(trusted, isForwarded(header)), http.CanonicalHeaderKey(header)}
}

func (p *headerResolver) fromHeader(remoteAddr string, h http.Header) (netip.Addr, bool) {
	return p.resolver.clientIP(remoteAddr, h[p.header])
}

// trustedForTests are the proxies of the client-IP tests.
var trustedForTests = []string{"10.0.0.0/8", "2001:db8:ffff::/48", "::ffff:192.168.0.0/112", "127.0.0.1"}

func TestClientIP(t *testing.T) {
	xff := newHeaderResolver(mustTrusted(t, trustedForTests...), "X-Forwarded-For")
	fwd := newHeaderResolver(mustTrusted(t, trustedForTests...), "Forwarded")
	const proxy = "10.0.0.1:443"
	// 33 trusted hops left of the peer, the client left of them.
	var hops []string
	for i := range 40 {
		hops = append(hops, "10.1.0."+strconv.Itoa(i+1))
	}
	manyHops := "203.0.113.7, " + strings.Join(hops, ", ")
	tests := []struct {
		name   string
		r      *headerResolver
		remote string
		header map[string][]string
		want   string // "" for no address
	}{
		// The peer.
		{"untrusted peer", &xff, "198.51.100.1:5000", nil, "198.51.100.1"},
		{"untrusted peer spoofs XFF", &xff, "198.51.100.1:5000", h("X-Forwarded-For", "1.1.1.1"), "198.51.100.1"},
		{"untrusted peer spoofs Forwarded", &fwd, "198.51.100.1:5000", h("Forwarded", "for=1.1.1.1"), "198.51.100.1"},
		{"untrusted peer spoofs a trusted hop", &xff, "198.51.100.1:5000", h("X-Forwarded-For", "10.0.0.9"), "198.51.100.1"},
		{"trusted peer without header", &xff, proxy, nil, "10.0.0.1"},
		{"bare RemoteAddr", &xff, "198.51.100.1", nil, "198.51.100.1"},
		{"IPv6 RemoteAddr", &xff, "[2001:db8::5]:80", nil, "2001:db8::5"},
		{"IPv6 RemoteAddr with zone", &xff, "[fe80::1%eth0]:80", nil, "fe80::1"},
		{"IPv4-mapped RemoteAddr", &xff, "[::ffff:198.51.100.1]:80", nil, "198.51.100.1"},
		{"IPv4-mapped trusted RemoteAddr", &xff, "[::ffff:10.0.0.1]:80", h("X-Forwarded-For", "203.0.113.7"), "203.0.113.7"},
		{"mapped prefix trusts IPv4", &xff, "192.168.3.4:80", h("X-Forwarded-For", "203.0.113.7"), "203.0.113.7"},
		{"empty RemoteAddr", &xff, "", nil, ""},
		{"garbage RemoteAddr", &xff, "pipe", nil, ""},
		{"unspecified RemoteAddr", &xff, "0.0.0.0:80", nil, ""},

		// X-Forwarded-For from a trusted peer.
		{"client", &xff, proxy, h("X-Forwarded-For", "203.0.113.7"), "203.0.113.7"},
		{"extra leftmost entries", &xff, proxy, h("X-Forwarded-For", "1.1.1.1, 2.2.2.2, 203.0.113.7"), "203.0.113.7"},
		{"spoofed trusted leftmost", &xff, proxy, h("X-Forwarded-For", "10.0.0.9, 203.0.113.7"), "203.0.113.7"},
		{"trusted chain", &xff, proxy, h("X-Forwarded-For", "1.1.1.1, 203.0.113.7, 10.0.0.2, 10.0.0.3"), "203.0.113.7"},
		{"every hop trusted", &xff, proxy, h("X-Forwarded-For", "10.0.0.2, 10.0.0.3"), "10.0.0.2"},
		{"garbage rightmost", &xff, proxy, h("X-Forwarded-For", "203.0.113.7, garbage"), "10.0.0.1"},
		{"garbage leftmost", &xff, proxy, h("X-Forwarded-For", "garbage, 203.0.113.7"), "203.0.113.7"},
		{"garbage after trusted hop", &xff, proxy, h("X-Forwarded-For", "203.0.113.7, bogus, 10.0.0.3"), "10.0.0.3"},
		{"IPv6 client", &xff, proxy, h("X-Forwarded-For", "2001:db8:1:2::5"), "2001:db8:1:2::5"},
		{"IPv6 trusted hop", &xff, proxy, h("X-Forwarded-For", "2001:db8:1:2::5, 2001:db8:ffff::1"), "2001:db8:1:2::5"},
		{"IPv4-mapped client", &xff, proxy, h("X-Forwarded-For", "::ffff:203.0.113.7"), "203.0.113.7"},
		{"IPv4-mapped trusted hop", &xff, proxy, h("X-Forwarded-For", "203.0.113.7, ::ffff:10.0.0.3"), "203.0.113.7"},
		{"zone", &xff, proxy, h("X-Forwarded-For", "fe80::1%eth0"), "fe80::1"},
		{"zone in brackets with port", &xff, proxy, h("X-Forwarded-For", "[fe80::1%25eth0]:80"), "fe80::1"},
		{"IPv4 with port", &xff, proxy, h("X-Forwarded-For", "203.0.113.7:4711"), "203.0.113.7"},
		{"IPv6 with port", &xff, proxy, h("X-Forwarded-For", "[2001:db8::7]:4711"), "2001:db8::7"},
		{"IPv6 in brackets", &xff, proxy, h("X-Forwarded-For", "[2001:db8::7]"), "2001:db8::7"},
		{"bad port", &xff, proxy, h("X-Forwarded-For", "203.0.113.7:http"), "10.0.0.1"},
		{"IPv4 in brackets", &xff, proxy, h("X-Forwarded-For", "[203.0.113.7]"), "10.0.0.1"},
		{"many hops", &xff, proxy, h("X-Forwarded-For", manyHops), hops[40-maxHops]},
		{"empty entry between", &xff, proxy, h("X-Forwarded-For", "203.0.113.7,,10.0.0.3"), "10.0.0.3"},
		{"empty entry rightmost", &xff, proxy, h("X-Forwarded-For", "203.0.113.7, "), "10.0.0.1"},
		{"empty header", &xff, proxy, h("X-Forwarded-For", ""), "10.0.0.1"},
		{"whitespace only", &xff, proxy, h("X-Forwarded-For", " \t "), "10.0.0.1"},
		{"several header lines", &xff, proxy, h("X-Forwarded-For", "1.1.1.1", "203.0.113.7"), "203.0.113.7"},
		{"trusted hop on its own line", &xff, proxy, h("X-Forwarded-For", "203.0.113.7", "10.0.0.3"), "203.0.113.7"},
		{"empty client line", &xff, proxy, h("X-Forwarded-For", "", "203.0.113.7"), "203.0.113.7"},
		{"hex IPv4", &xff, proxy, h("X-Forwarded-For", "0x7f.0.0.1"), "10.0.0.1"},
		{"integer IPv4", &xff, proxy, h("X-Forwarded-For", "2130706433"), "10.0.0.1"},
		{"octal IPv4", &xff, proxy, h("X-Forwarded-For", "017.0.0.1"), "10.0.0.1"},
		{"short IPv4", &xff, proxy, h("X-Forwarded-For", "127.1"), "10.0.0.1"},
		{"unspecified", &xff, proxy, h("X-Forwarded-For", "0.0.0.0"), "10.0.0.1"},
		{"unspecified IPv6", &xff, proxy, h("X-Forwarded-For", "::"), "10.0.0.1"},
		{"quoted", &xff, proxy, h("X-Forwarded-For", `"203.0.113.7"`), "203.0.113.7"},
		{"half quoted", &xff, proxy, h("X-Forwarded-For", `"203.0.113.7`), "10.0.0.1"},
		{"huge entry", &xff, proxy, h("X-Forwarded-For", strings.Repeat("1", 500)), "10.0.0.1"},
		{"host name", &xff, proxy, h("X-Forwarded-For", "evil.example"), "10.0.0.1"},
		{"Forwarded ignored when XFF is read", &xff, proxy, h("Forwarded", "for=1.1.1.1"), "10.0.0.1"},

		// Forwarded (RFC 7239) from a trusted peer.
		{"for", &fwd, proxy, h("Forwarded", "for=203.0.113.7"), "203.0.113.7"},
		{"for with other pairs", &fwd, proxy, h("Forwarded", "for=1.1.1.1, for=203.0.113.7;proto=https;by=10.0.0.1"), "203.0.113.7"},
		{"case-insensitive name", &fwd, proxy, h("Forwarded", "For=203.0.113.7"), "203.0.113.7"},
		{"quoted IPv6 with port", &fwd, proxy, h("Forwarded", `for="[2001:db8:cafe::17]:4711"`), "2001:db8:cafe::17"},
		{"quoted IPv6", &fwd, proxy, h("Forwarded", `for="[2001:db8:cafe::17]"`), "2001:db8:cafe::17"},
		{"unquoted IPv6 in brackets", &fwd, proxy, h("Forwarded", `for=[2001:db8:cafe::17]`), "2001:db8:cafe::17"},
		{"IPv4-mapped", &fwd, proxy, h("Forwarded", `for="[::ffff:203.0.113.7]"`), "203.0.113.7"},
		{"quoted IPv4 with escapes", &fwd, proxy, h("Forwarded", `for="203.0.113\.7"`), "203.0.113.7"},
		{"obfuscated port", &fwd, proxy, h("Forwarded", `for="203.0.113.7:_p1"`), "203.0.113.7"},
		{"unknown", &fwd, proxy, h("Forwarded", "for=unknown"), "10.0.0.1"},
		{"obfuscated node", &fwd, proxy, h("Forwarded", "for=_hidden"), "10.0.0.1"},
		{"quoted obfuscated node", &fwd, proxy, h("Forwarded", `for="_gazonk"`), "10.0.0.1"},
		{"obfuscated client behind trusted hop", &fwd, proxy, h("Forwarded", "for=_hidden, for=10.0.0.3"), "10.0.0.3"},
		{"no for", &fwd, proxy, h("Forwarded", "proto=https;by=10.0.0.1"), "10.0.0.1"},
		{"for twice", &fwd, proxy, h("Forwarded", "for=203.0.113.7;for=1.1.1.1"), "10.0.0.1"},
		{"empty for", &fwd, proxy, h("Forwarded", `for=""`), "10.0.0.1"},
		{"empty pair", &fwd, proxy, h("Forwarded", "for=203.0.113.7;;proto=http"), "203.0.113.7"},
		{"pair without value", &fwd, proxy, h("Forwarded", "for"), "10.0.0.1"},
		{"bad name", &fwd, proxy, h("Forwarded", "f@r=203.0.113.7"), "10.0.0.1"},
		{"client's unbalanced quote", &fwd, proxy, h("Forwarded", `for="1.1.1.1, for=203.0.113.7`), "203.0.113.7"},
		{"quote inside token", &fwd, proxy, h("Forwarded", `for=203.0.113.7"`), "10.0.0.1"},
		{"stray quote inside quoted", &fwd, proxy, h("Forwarded", `for="203."0.113.7"`), "10.0.0.1"},
		{"trailing backslash", &fwd, proxy, h("Forwarded", `for="203.0.113.7\"`), "10.0.0.1"},
		{"unquoted IPv6 with port", &fwd, proxy, h("Forwarded", "for=2001:db8::1"), "2001:db8::1"},
		{"XFF ignored when Forwarded is read", &fwd, proxy, h("X-Forwarded-For", "1.1.1.1"), "10.0.0.1"},
		{"spoofed Forwarded left of ours", &fwd, proxy, h("Forwarded", "for=10.0.0.5, for=203.0.113.7"), "203.0.113.7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.r.fromHeader(tt.remote, http.Header(tt.header))
			if tt.want == "" {
				if ok {
					t.Fatalf("clientIP(%q, %v) = %v, want no address", tt.remote, tt.header, got)
				}
				return
			}
			if !ok || got != netip.MustParseAddr(tt.want) {
				t.Fatalf("clientIP(%q, %v) = %v, %v; want %s", tt.remote, tt.header, got, ok, tt.want)
			}
		})
	}
}

func h(name string, values ...string) map[string][]string {
	return map[string][]string{http.CanonicalHeaderKey(name): values}
}

func TestParseTrusted(t *testing.T) {
	tests := []struct {
		in      string
		want    string // "" for an error
		inMatch string
	}{
		{"10.0.0.0/8", "10.0.0.0/8", "10.9.9.9"},
		{"10.1.2.3/8", "10.0.0.0/8", "10.9.9.9"},
		{"192.0.2.1", "192.0.2.1/32", "192.0.2.1"},
		{"2001:db8::/32", "2001:db8::/32", "2001:db8::1"},
		{"::1", "::1/128", "::1"},
		{"::ffff:10.0.0.0/104", "10.0.0.0/8", "10.1.1.1"},
		{" 10.0.0.0/8 ", "10.0.0.0/8", "10.1.1.1"},
		{"0.0.0.0/0", "", ""},
		{"::/0", "", ""},
		{"::ffff:0.0.0.0/96", "", ""},
		{"::ffff:0:0/80", "", ""},
		{"10.0.0.0/33", "", ""},
		{"fe80::1%eth0", "", ""},
		{"example.com", "", ""},
		{"", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseTrusted([]string{tt.in})
			if tt.want == "" {
				if err == nil {
					t.Fatalf("parseTrusted(%q) = %v, want an error", tt.in, got)
				}
				return
			}
			if err != nil || len(got) != 1 || got[0].String() != tt.want {
				t.Fatalf("parseTrusted(%q) = %v, %v; want %s", tt.in, got, err, tt.want)
			}
			if !got[0].Contains(netip.MustParseAddr(tt.inMatch)) {
				t.Errorf("%v does not contain %s", got[0], tt.inMatch)
			}
		})
	}
}
