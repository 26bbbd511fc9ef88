package rules

import (
	"fmt"
	"strings"
)

// KeySource is a set of the identities a rule keys requests by. A request
// (an HTTP request, a gRPC call) is keyed by the first one it carries, in
// the fixed order API key, user, client IP; one that carries none of them
// is keyed by its client IP, so that no request escapes a rule by omitting
// its identity. The zero value means all three.
type KeySource uint8

const (
	// KeyAPIKey keys by the API key (the middleware's APIKeyHeader, or
	// metadata key), hashed.
	KeyAPIKey KeySource = 1 << iota
	// KeyUser keys by the user the middleware's Config.User returns.
	KeyUser
	// KeyIP keys by the client IP (see the middleware's TrustedProxies),
	// or its IPv6 prefix (IPv6Prefix).
	KeyIP

	// keyAll is what the zero value means: every source.
	keyAll = KeyAPIKey | KeyUser | KeyIP
)

// keyNames are the sources' names in a rules file, in priority order.
var keyNames = [...]struct {
	s    KeySource
	name string
}{{KeyAPIKey, "api-key"}, {KeyUser, "user"}, {KeyIP, "ip"}}

// String returns the sources in priority order, as in a rules file:
// "api-key|user|ip" (also for the zero value, which means them all).
func (k KeySource) String() string {
	if k == 0 {
		k = keyAll
	}
	var parts []string
	for _, n := range keyNames {
		if k&n.s != 0 {
			parts = append(parts, n.name)
		}
	}
	if rest := k &^ keyAll; rest != 0 {
		parts = append(parts, fmt.Sprintf("KeySource(%#x)", uint8(rest)))
	}
	return strings.Join(parts, "|")
}

// ParseKeySource returns the source a rules file calls name ("api-key",
// "user" or "ip"), and false for any other name.
func ParseKeySource(name string) (KeySource, bool) {
	for _, n := range keyNames {
		if n.name == name {
			return n.s, true
		}
	}
	return 0, false
}
