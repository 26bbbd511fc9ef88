package httplimit

import (
	"net/http"

	"github.com/hybridlimit/hybridlimit/rules"
)

// key returns the Limiter key of r under rule rl (see rules.Keys.Key):
//
//	<prefix><rule>:key:<hash>    API key, SHA-256 truncated to 128 bits
//	<prefix><rule>:user:<id>     user id (userh:<hash> when long or unusual)
//	<prefix><rule>:ip:<addr>     client IP, or its prefix ("2001:db8::/64")
//
// The first source of the rule that r carries wins; the client IP is the
// last resort of every rule.
func (m *Middleware) key(r *http.Request, rl *rule) string {
	req := rules.Request{APIKey: r.Header.Get(m.cfg.APIKeyHeader), Peer: r.RemoteAddr, Forwarded: r.Header[m.cfg.ForwardedHeader]}
	var user func() (string, bool)
	if m.cfg.User != nil {
		user = func() (string, bool) { return m.cfg.User(r) }
	}
	return m.keys.Key(rl.KeyPrefix, rl.Key, &req, user)
}

// digest returns 128 bits of SHA-256 of s in hex.
func digest(s string) string { return rules.Digest(s) }
