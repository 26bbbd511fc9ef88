package httplimit

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
)

// maxRawUser is the longest user id put in a key as it is; longer ones, and
// ones with characters other than printable ASCII, are hashed.
const maxRawUser = 64

// key returns the Limiter key of r under rule rl:
//
//	<prefix><rule>:key:<hash>    API key, SHA-256 truncated to 128 bits
//	<prefix><rule>:user:<id>     user id (userh:<hash> when long or unusual)
//	<prefix><rule>:ip:<addr>     client IP, or its prefix ("2001:db8::/64")
//
// The first source of the rule that r carries wins; the client IP is the
// last resort of every rule. API keys are hashed so that Redis never holds
// a credential; every part is bounded, so the key fits hybrid.MaxKeyLen.
func (m *Middleware) key(r *http.Request, rl *rule) string {
	if rl.Key&KeyAPIKey != 0 {
		if v := trimOWS(r.Header.Get(m.cfg.APIKeyHeader)); v != "" && (m.cfg.VerifyAPIKey == nil || m.cfg.VerifyAPIKey(v)) {
			return rl.keyPrefix + "key:" + digest(v)
		}
	}
	if rl.Key&KeyUser != 0 && m.cfg.User != nil {
		if id, ok := m.cfg.User(r); ok && id != "" {
			if plain(id) {
				return rl.keyPrefix + "user:" + id
			}
			return rl.keyPrefix + "userh:" + digest(id)
		}
	}
	return rl.keyPrefix + "ip:" + m.ipKey(r)
}

// ipKey returns the client address, masked to the configured prefix
// length: "203.0.113.7", "2001:db8:1:2::/64"; "unknown" when RemoteAddr
// holds no address (a Unix socket).
func (m *Middleware) ipKey(r *http.Request) string {
	a, ok := m.ip.clientIP(r.RemoteAddr, r.Header)
	if !ok {
		return "unknown"
	}
	bits := m.cfg.IPv6Prefix
	if a.Is4() {
		bits = m.cfg.IPv4Prefix
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

// digest returns 128 bits of SHA-256 of s in hex.
func digest(s string) string {
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
