package rules

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

const (
	// maxHops bounds the entries of a forwarding header examined for one
	// request: past them, the last trusted hop reached is the client.
	maxHops = 32
	// maxEntryLen bounds one entry: a longer one is malformed without
	// being parsed (the longest valid one, a quoted, bracketed IPv6
	// address with a zone and a port, is far shorter).
	maxEntryLen = 128
)

// parseTrusted parses a list of trusted proxies: CIDR prefixes
// ("10.0.0.0/8") or single addresses ("2001:db8::1"). IPv4-mapped IPv6
// prefixes (::ffff:10.0.0.0/104) become IPv4 prefixes, as addresses are
// compared unmapped. A prefix of length 0 is refused: it would let every
// client choose its key. Errors name the entry; callers wrap them in their
// own sentinel.
func parseTrusted(list []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(list))
	for _, s := range list {
		s = strings.TrimSpace(s)
		var p netip.Prefix
		if strings.Contains(s, "/") {
			var err error
			if p, err = netip.ParsePrefix(s); err != nil {
				return nil, fmt.Errorf("trusted proxy %q: %w", s, err)
			}
		} else {
			a, err := netip.ParseAddr(s)
			if err != nil {
				return nil, fmt.Errorf("trusted proxy %q: %w", s, err)
			}
			if a.Zone() != "" {
				return nil, fmt.Errorf("trusted proxy %q: zones are not compared; drop %%%s", s, a.Zone())
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		if a := p.Addr(); a.Is4In6() {
			if p.Bits() < 96 {
				return nil, fmt.Errorf("trusted proxy %q: an IPv4-mapped prefix needs at least 96 bits", s)
			}
			p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
		}
		if p.Bits() == 0 {
			return nil, fmt.Errorf("trusted proxy %q trusts every address, which lets any client choose its key", s)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// resolver finds the client address of a request from its peer and the
// forwarding header its trusted proxies appended to. The zero resolver
// trusts no proxy. It is immutable, so safe for concurrent use.
type resolver struct {
	trusted   []netip.Prefix
	forwarded bool // the header is RFC 7239 Forwarded
}

// newResolver returns a resolver believing the forwarding header of the
// peers in trusted (see parseTrusted); forwarded says the header is RFC
// 7239 Forwarded rather than a list of addresses like X-Forwarded-For.
func newResolver(trusted []netip.Prefix, forwarded bool) resolver {
	return resolver{trusted: trusted, forwarded: forwarded}
}

// isForwarded reports whether a header (or gRPC metadata key) of this name
// is parsed as RFC 7239 Forwarded: "Forwarded" in any case.
func isForwarded(name string) bool { return strings.EqualFold(name, "Forwarded") }

// isTrusted reports whether a is a trusted proxy.
func (p *resolver) isTrusted(a netip.Addr) bool {
	for _, t := range p.trusted {
		if t.Contains(a) {
			return true
		}
	}
	return false
}

// clientIP returns the client's address: the peer's when it is not a
// trusted proxy; otherwise the first untrusted address of the forwarding
// header walked right to left (each trusted hop appends its own peer, so
// the entries on the right were written by our proxies and those left of
// the first untrusted one by the client, who can write anything). When an
// entry is malformed or hidden ("unknown", "_obfuscated"), when every entry
// is trusted, or after maxHops entries, the client is the last address
// reached, which a trusted hop vouched for. ok is false only when
// RemoteAddr itself holds no address. Addresses come back unmapped (an
// IPv4-mapped IPv6 address becomes IPv4) and without a zone.
//
// remoteAddr is the peer as "host:port", "[v6]:port" or a bare address;
// lines are the values of the forwarding header, in the order received
// (one per header line or metadata value).
func (p *resolver) clientIP(remoteAddr string, lines []string) (addr netip.Addr, ok bool) {
	peer, ok := parseHost(remoteAddr)
	if !ok {
		return netip.Addr{}, false
	}
	if len(p.trusted) == 0 || !p.isTrusted(peer) {
		return peer, true
	}
	client := peer
	hops := 0
	for i := len(lines) - 1; i >= 0; i-- {
		line := lines[i]
		for {
			j := strings.LastIndexByte(line, ',')
			entry := line[j+1:]
			if hops++; hops > maxHops {
				return client, true
			}
			var a netip.Addr
			var valid bool
			if p.forwarded {
				a, valid = parseForwardedElement(entry)
			} else {
				a, valid = parseNode(entry)
			}
			if !valid {
				return client, true
			}
			if !p.isTrusted(a) {
				return a, true
			}
			client = a
			if j < 0 {
				break
			}
			line = line[:j]
		}
	}
	return client, true
}

// parseHost parses a peer address: "host:port", "[v6]:port" or a bare
// address, unmapped and without its zone; false for anything else (a Unix
// socket's path) and for the unspecified address.
func parseHost(s string) (netip.Addr, bool) {
	if len(s) > maxEntryLen {
		return netip.Addr{}, false
	}
	host := s
	if h, _, err := net.SplitHostPort(s); err == nil {
		host = h
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	return normalize(a)
}

// normalize drops the zone and unmaps IPv4-mapped IPv6, so that one client
// has one form; the unspecified address is no client.
func normalize(a netip.Addr) (netip.Addr, bool) {
	a = a.Unmap().WithZone("")
	if !a.IsValid() || a.IsUnspecified() {
		return netip.Addr{}, false
	}
	return a, true
}

// trimOWS trims optional whitespace (RFC 9110).
func trimOWS(s string) string { return strings.Trim(s, " \t") }

// parseNode parses one address as proxies write it: "192.0.2.1",
// "192.0.2.1:8080", "2001:db8::1", "[2001:db8::1]", "[2001:db8::1]:8080",
// with optional surrounding whitespace and double quotes and an optional
// IPv6 zone. IPv4 must be dotted decimal: hex, octal and integer forms are
// malformed.
func parseNode(s string) (netip.Addr, bool) {
	s = trimOWS(s)
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	if s == "" || len(s) > maxEntryLen {
		return netip.Addr{}, false
	}
	if s[0] == '[' {
		end := strings.IndexByte(s, ']')
		if end < 0 || !validPort(s[end+1:], true) {
			return netip.Addr{}, false
		}
		a, err := netip.ParseAddr(s[1:end])
		if err != nil || !a.Is6() {
			return netip.Addr{}, false
		}
		return normalize(a)
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return normalize(a)
	}
	// IPv4 with a port.
	i := strings.LastIndexByte(s, ':')
	if i < 0 || !validPort(s[i:], false) {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(s[:i])
	if err != nil || !a.Is4() {
		return netip.Addr{}, false
	}
	return normalize(a)
}

// validPort reports whether s is ":" and 1 to 5 digits (or empty, when
// optional). RFC 7239 also allows an obfuscated port ("_abc"), accepted
// here too: the port is not used.
func validPort(s string, optional bool) bool {
	if s == "" {
		return optional
	}
	if s[0] != ':' || len(s) < 2 || len(s) > 6 {
		return false
	}
	if s[1] == '_' {
		return isToken(s[2:]) && len(s) > 2
	}
	for _, c := range s[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// parseForwardedElement returns the address in the for= parameter of one
// RFC 7239 element ("for=192.0.2.60;proto=http;by=203.0.113.43"). An
// element without for=, with it twice, with a hidden node ("unknown",
// "_gazonk") or with malformed syntax has no address.
//
// Elements are split at every comma, even one inside a quoted string: no
// valid value contains one, and honouring quotes would let a client's
// unbalanced quote swallow the elements our proxies append after it.
func parseForwardedElement(elem string) (netip.Addr, bool) {
	elem = trimOWS(elem)
	if elem == "" || len(elem) > 4*maxEntryLen {
		return netip.Addr{}, false
	}
	var node string
	found := false
	for pair := range strings.SplitSeq(elem, ";") {
		pair = trimOWS(pair)
		if pair == "" {
			continue
		}
		name, value, ok := strings.Cut(pair, "=")
		if !ok || !isToken(name) {
			return netip.Addr{}, false
		}
		if !strings.EqualFold(name, "for") {
			continue
		}
		if found {
			return netip.Addr{}, false
		}
		found = true
		v, ok := unquote(value)
		if !ok {
			return netip.Addr{}, false
		}
		node = v
	}
	if !found || node == "" || node[0] == '_' || strings.EqualFold(node, "unknown") {
		return netip.Addr{}, false
	}
	return parseNode(node)
}

// unquote returns a token as is and a quoted-string's content with its
// escapes resolved.
func unquote(v string) (string, bool) {
	if v == "" {
		return "", false
	}
	if v[0] != '"' {
		// A token; bracketed IPv6 is accepted unquoted too, though RFC 7239
		// requires quotes, since a trusted hop wrote it.
		return v, !strings.ContainsAny(v, "\" \t")
	}
	if len(v) < 2 || v[len(v)-1] != '"' {
		return "", false
	}
	in := v[1 : len(v)-1]
	if !strings.ContainsRune(in, '\\') {
		return in, !strings.ContainsRune(in, '"')
	}
	var b strings.Builder
	for i := 0; i < len(in); i++ {
		c := in[i]
		switch c {
		case '\\':
			if i++; i == len(in) {
				return "", false
			}
			b.WriteByte(in[i])
		case '"':
			return "", false
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}

// isToken reports whether s is a non-empty RFC 9110 token.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
