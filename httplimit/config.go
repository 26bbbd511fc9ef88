package httplimit

import (
	"cmp"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/hybridlimit/hybridlimit/rules"
)

// Defaults of Config.
const (
	// DefaultAPIKeyHeader is the header that carries API keys.
	DefaultAPIKeyHeader = "X-API-Key"
	// DefaultForwardedHeader is the header trusted proxies append the
	// client's address to.
	DefaultForwardedHeader = "X-Forwarded-For"
	// DefaultPrefix starts every key the Middleware sends to the Limiter.
	DefaultPrefix = "http:"
	// DefaultIPv4Prefix and DefaultIPv6Prefix are the prefix lengths
	// clients are keyed by: one IPv4 address, one IPv6 /64 (what a
	// single subscriber is usually given).
	DefaultIPv4Prefix = rules.DefaultIPv4Prefix
	DefaultIPv6Prefix = rules.DefaultIPv6Prefix
)

// HeaderStyle selects the rate-limit header fields of a response.
type HeaderStyle uint8

const (
	// HeadersDraft (the default) sends the fields of the IETF draft
	// draft-ietf-httpapi-ratelimit-headers: RateLimit-Policy, one item
	// per limit of the rule, and RateLimit, for the binding limit.
	HeadersDraft HeaderStyle = iota
	// HeadersLegacy sends X-RateLimit-Limit, X-RateLimit-Remaining and
	// X-RateLimit-Reset for the binding limit.
	HeadersLegacy
	// HeadersBoth sends both sets.
	HeadersBoth
	// HeadersNone sends neither (a denial still carries Retry-After).
	HeadersNone
)

// String returns the style's Go name, for example "HeadersDraft".
func (s HeaderStyle) String() string {
	switch s {
	case HeadersDraft:
		return "HeadersDraft"
	case HeadersLegacy:
		return "HeadersLegacy"
	case HeadersBoth:
		return "HeadersBoth"
	case HeadersNone:
		return "HeadersNone"
	}
	return fmt.Sprintf("HeaderStyle(%d)", uint8(s))
}

func (s HeaderStyle) draft() bool  { return s == HeadersDraft || s == HeadersBoth }
func (s HeaderStyle) legacy() bool { return s == HeadersLegacy || s == HeadersBoth }

// Config configures a Middleware. The zero value of each field means its
// documented default. Only Rules can change later (SetRules, Watch).
type Config struct {
	// Rules are the rules in force until SetRules or Watch replaces them.
	// Default: none, so every request passes unlimited.
	Rules RuleSet

	// TrustedProxies lists the proxies, as CIDR prefixes ("10.0.0.0/8")
	// or single addresses ("2001:db8::1"), whose forwarding header is
	// believed. A request from any other peer is keyed by its
	// RemoteAddr, whatever headers it sends. Default: none. A prefix of
	// length 0 is refused: it would let every client choose its key.
	TrustedProxies []string
	// ForwardedHeader is the header the trusted proxies append the
	// address of their peer to. "Forwarded" is parsed as RFC 7239 (its
	// for= parameters); any other name as a comma-separated list of
	// addresses, like X-Forwarded-For. Only one header is read: a proxy
	// that sets X-Forwarded-For leaves a client's own Forwarded header
	// untouched, and reading it would let the client choose its key.
	// Default "X-Forwarded-For".
	ForwardedHeader string
	// IPv4Prefix and IPv6Prefix are the prefix lengths a client address
	// is keyed by: every address of one IPv6 /64 shares one budget by
	// default, since one subscriber is usually given a whole /64.
	// Defaults 32 and 64.
	IPv4Prefix, IPv6Prefix int

	// APIKeyHeader is the header read for rules keyed by API key.
	// Default "X-API-Key".
	APIKeyHeader string
	// VerifyAPIKey, when set, is asked about every API key before it is
	// used as a key; a request whose key it rejects is keyed by its next
	// source (user, then IP). Without it any non-empty value is taken,
	// so a client can pick a fresh budget per request by sending a new
	// key: set it, or authenticate before this middleware and key by
	// user. Default nil.
	VerifyAPIKey func(key string) bool
	// User returns the authenticated user of a request, for rules keyed
	// by user, and false for an anonymous one. Default nil: no user.
	User func(*http.Request) (string, bool)
	// Tier returns the tier of a request ("free", "pro"), which selects
	// among rules that name a Tier; "" is no tier. Default nil: no tier.
	Tier func(*http.Request) string

	// Headers selects the rate-limit header fields. Default HeadersDraft.
	Headers HeaderStyle
	// ResetUnix sends X-RateLimit-Reset as a Unix time (now plus the
	// binding limit's ResetAfter, rounded up) instead of delta seconds.
	ResetUnix bool

	// Prefix starts every key sent to the Limiter, followed by the rule
	// name: "http:search:ip:203.0.113.7". At most 64 bytes. Default
	// "http:".
	Prefix string
	// Logger receives reloads, rejected rule files, shadow denials (at
	// most one line per rule per second) and Limiter errors. Default
	// slog.Default().
	Logger *slog.Logger
}

// withDefaults copies cfg, fills its defaults and validates it.
func (c Config) withDefaults() (Config, rules.Keys, error) {
	c.ForwardedHeader = http.CanonicalHeaderKey(cmp.Or(c.ForwardedHeader, DefaultForwardedHeader))
	c.APIKeyHeader = http.CanonicalHeaderKey(cmp.Or(c.APIKeyHeader, DefaultAPIKeyHeader))
	if c.Headers > HeadersNone {
		return c, rules.Keys{}, fmt.Errorf("%w: unknown Headers %v", ErrInvalidConfig, c.Headers)
	}
	b := rules.Base{TrustedProxies: c.TrustedProxies, Forwarded: c.ForwardedHeader, IPv4Prefix: c.IPv4Prefix,
		IPv6Prefix: c.IPv6Prefix, VerifyAPIKey: c.VerifyAPIKey, Prefix: c.Prefix, Logger: c.Logger}
	keys, err := b.Check(DefaultPrefix, ErrInvalidConfig)
	c.TrustedProxies, c.Prefix, c.Logger = b.TrustedProxies, b.Prefix, b.Logger
	return c, keys, err
}
