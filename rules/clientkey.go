package clientkey

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/hybridlimit/hybridlimit/rules"
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

// Source is rules.KeySource: the identities a rule keys requests by.
type Source = rules.KeySource

// The sources, and All, what the zero Source means.
const (
	APIKey = rules.KeyAPIKey
	User   = rules.KeyUser
	IP     = rules.KeyIP
	All    = APIKey | User | IP
)

// ParseSource parses a rules file's key field: "ip" or ["api-key", "user",
// "ip"]; nil is the zero Source (all three).
func ParseSource(v any) (Source, error) {
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
	var k Source
	for _, s := range names {
		src, ok := rules.ParseKeySource(s)
		if !ok {
			return 0, fmt.Errorf("key: unknown source %q: want api-key, user or ip", s)
		}
		k |= src
	}
	return k, nil
}

// Keys builds the keys of requests. It is immutable once configured, so
// safe for concurrent use.
type Keys struct {
	// Resolver finds the client address.
	Resolver Resolver
	// IPv4Prefix and IPv6Prefix are the prefix lengths a client address
	// is keyed by, validated by CheckPrefixes.
	IPv4Prefix, IPv6Prefix int
	// Verify, when set, is asked about every API key before it is used;
	// a rejected key is skipped for the next source.
	Verify func(key string) bool
}

// NewKeys checks the key settings of a middleware's Config and returns
// their Keys: the trusted proxies (see ParseTrusted), the name of the
// forwarding header or metadata key (RFC 7239 Forwarded when IsForwarded),
// the prefix lengths (0 for their defaults) and the API key check. Errors
// name the setting; callers wrap them in their own sentinel.
func NewKeys(trusted []string, forwardedName string, ipv4Prefix, ipv6Prefix int, verify func(string) bool) (Keys, error) {
	if err := CheckPrefixes(&ipv4Prefix, &ipv6Prefix); err != nil {
		return Keys{}, err
	}
	prefixes, err := ParseTrusted(trusted)
	if err != nil {
		return Keys{}, err
	}
	return Keys{
		Resolver:   NewResolver(prefixes, IsForwarded(forwardedName)),
		IPv4Prefix: ipv4Prefix,
		IPv6Prefix: ipv6Prefix,
		Verify:     verify,
	}, nil
}

// Request is what one request offers Key besides its user.
type Request struct {
	// APIKey is the raw API key ("" for none); surrounding whitespace is
	// trimmed.
	APIKey string
	// Peer is the peer's address as ParseHost reads it, and Forwarded the
	// forwarding header's lines (see Resolver.ClientIP).
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
func (k *Keys) Key(prefix string, src Source, r *Request, user func() (string, bool)) string {
	if src == 0 {
		src = All
	}
	if src&APIKey != 0 {
		if v := TrimOWS(r.APIKey); v != "" && (k.Verify == nil || k.Verify(v)) {
			return prefix + "key:" + Digest(v)
		}
	}
	if src&User != 0 && user != nil {
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
	return prefix + "ip:" + k.IPKey(r.Peer, r.Forwarded)
}

// IPKey returns the client address of a request from peer with the
// forwarding header's lines, masked to the configured prefix length:
// "203.0.113.7", "2001:db8:1:2::/64"; "unknown" when the peer holds no
// address (a Unix socket).
func (k *Keys) IPKey(peer string, forwarded []string) string {
	a, ok := k.Resolver.ClientIP(peer, forwarded)
	if !ok {
		return "unknown"
	}
	bits := k.IPv6Prefix
	if a.Is4() {
		bits = k.IPv4Prefix
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

// CheckPrefixes fills the zero prefix lengths with their defaults and
// checks them.
func CheckPrefixes(v4, v6 *int) error {
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
