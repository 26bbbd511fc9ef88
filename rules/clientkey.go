package rules

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// Defaults of Keys, which the middlewares' Configs document as theirs.
const (
	// DefaultIPv4Prefix and DefaultIPv6Prefix are the prefix lengths
	// clients are keyed by: one IPv4 address, one IPv6 /64 (what a single
	// subscriber is usually given).
	DefaultIPv4Prefix = 32
	DefaultIPv6Prefix = 64
)

// maxRawUser is the longest user id put in a key as it is; longer ones, and
// ones with characters other than printable ASCII, are hashed.
const maxRawUser = 64

// parseKeyField parses a rules file's key field: "ip" or ["api-key", "user",
// "ip"]; nil is the zero KeySource (all three).
func parseKeyField(v any) (KeySource, error) {
	var names []string
	switch v := v.(type) {
	case nil:
		return 0, nil
	case string:
		names = []string{v}
	case []any:
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return 0, fmt.Errorf("key: %v is not a name (api-key, user, ip)", e)
			}
			names = append(names, s)
		}
	default:
		return 0, fmt.Errorf("key: %v: want api-key, user, ip or a list of them", v)
	}
	if len(names) == 0 {
		return 0, fmt.Errorf("key: empty list (omit it for api-key, user and ip)")
	}
	var k KeySource
	for _, s := range names {
		src, ok := ParseKeySource(s)
		if !ok {
			return 0, fmt.Errorf("key: unknown source %q: want api-key, user or ip", s)
		}
		k |= src
	}
	return k, nil
}

// Keys builds the keys of requests; Base.Check makes one. It is immutable,
// so safe for concurrent use.
type Keys struct {
	// resolver finds the client address.
	resolver resolver
	// v4 and v6 are the prefix lengths a client address is keyed by,
	// validated by checkPrefixes.
	v4, v6 int
	// verify, when set, is asked about every API key before it is used;
	// a rejected key is skipped for the next source.
	verify func(key string) bool
}

// newKeys checks the key settings of a middleware's Config (Base) and
// returns their Keys: the trusted proxies (see parseTrusted), the name of the
// forwarding header or metadata key (RFC 7239 Forwarded when isForwarded),
// the prefix lengths (0 for their defaults) and the API key check. Errors
// name the setting; Base.Check wraps them in the middleware's sentinel.
func newKeys(trusted []string, forwardedName string, ipv4Prefix, ipv6Prefix int, verify func(string) bool) (Keys, error) {
	if err := checkPrefixes(&ipv4Prefix, &ipv6Prefix); err != nil {
		return Keys{}, err
	}
	prefixes, err := parseTrusted(trusted)
	if err != nil {
		return Keys{}, err
	}
	return Keys{
		resolver: newResolver(prefixes, isForwarded(forwardedName)),
		v4:       ipv4Prefix,
		v6:       ipv6Prefix,
		verify:   verify,
	}, nil
}

// Request is what one request offers Key besides its user.
type Request struct {
	// APIKey is the raw API key ("" for none); surrounding whitespace is
	// trimmed.
	APIKey string
	// Peer is the peer's address: "host:port", "[v6]:port" or a bare
	// address. Forwarded holds the lines of the forwarding header or
	// metadata key, believed only when Peer is a trusted proxy.
	Peer      string
	Forwarded []string
	// Outgoing marks a call this process makes: it has no client address,
	// and its last resort is one budget per rule, "<prefix>all".
	Outgoing bool
}

// Key returns the Limiter key of r under a rule keyed by src whose keys
// start with prefix; user returns r's authenticated user (nil for none),
// and is called only when the rule keys by user and the API key did not
// serve:
//
//	<prefix>key:<hash>    API key, SHA-256 truncated to 128 bits
//	<prefix>user:<id>     user id (userh:<hash> when long or unusual)
//	<prefix>ip:<addr>     client IP, or its prefix ("2001:db8::/64")
//	<prefix>all           an outgoing call that carries neither
//
// The first source of src that r carries wins; the client IP is the last
// resort of every rule. API keys are hashed so that Redis never holds a
// credential; every part is bounded.
func (k *Keys) Key(prefix string, src KeySource, r *Request, user func() (string, bool)) string {
	if src == 0 {
		src = keyAll
	}
	if src&KeyAPIKey != 0 {
		if v := trimOWS(r.APIKey); v != "" && (k.verify == nil || k.verify(v)) {
			return prefix + "key:" + Digest(v)
		}
	}
	if src&KeyUser != 0 && user != nil {
		if id, ok := user(); ok && id != "" {
			if plain(id) {
				return prefix + "user:" + id
			}
			return prefix + "userh:" + Digest(id)
		}
	}
	if r.Outgoing {
		return prefix + "all"
	}
	return prefix + "ip:" + k.ipKey(r.Peer, r.Forwarded)
}

// ipKey returns the client address of a request from peer with the
// forwarding header's lines, masked to the configured prefix length:
// "203.0.113.7", "2001:db8:1:2::/64"; "unknown" when the peer holds no
// address (a Unix socket).
func (k *Keys) ipKey(peer string, forwarded []string) string {
	a, ok := k.resolver.clientIP(peer, forwarded)
	if !ok {
		return "unknown"
	}
	bits := k.v6
	if a.Is4() {
		bits = k.v4
	}
	if bits == a.BitLen() {
		return a.String()
	}
	p, err := a.Prefix(bits)
	if err != nil {
		return a.String() // unreachable: bits is validated
	}
	return p.String()
}

// checkPrefixes fills the zero prefix lengths with their defaults and
// checks them.
func checkPrefixes(v4, v6 *int) error {
	if *v4 == 0 {
		*v4 = DefaultIPv4Prefix
	}
	if *v6 == 0 {
		*v6 = DefaultIPv6Prefix
	}
	if *v4 < 1 || *v4 > 32 {
		return fmt.Errorf("IPv4Prefix %d outside [1, 32]", *v4)
	}
	if *v6 < 1 || *v6 > 128 {
		return fmt.Errorf("IPv6Prefix %d outside [1, 128]", *v6)
	}
	return nil
}

// Digest returns 128 bits of SHA-256 of s in hex.
func Digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:16])
}

// plain reports whether a user id can go into a key as it is: short,
// printable ASCII, without braces (which Redis Cluster reads as a hash tag).
func plain(s string) bool {
	if len(s) > maxRawUser {
		return false
	}
	return !strings.ContainsFunc(s, func(c rune) bool { return c <= ' ' || c > '~' || c == '{' || c == '}' })
}
