package grpclimit

import (
	"cmp"
	"context"
	"log/slog"
	"strings"

	"github.com/hybridlimit/hybridlimit/rules"
)

// Defaults of Config.
const (
	// DefaultAPIKeyMetadata is the metadata key that carries API keys.
	DefaultAPIKeyMetadata = "x-api-key"
	// DefaultForwardedMetadata is the metadata key trusted proxies append
	// the client's address to.
	DefaultForwardedMetadata = "x-forwarded-for"
	// DefaultPrefix starts every key the Interceptor sends to the Limiter.
	DefaultPrefix = "grpc:"
	// DefaultIPv4Prefix and DefaultIPv6Prefix are the prefix lengths
	// clients are keyed by: one IPv4 address, one IPv6 /64 (what a
	// single subscriber is usually given).
	DefaultIPv4Prefix = rules.DefaultIPv4Prefix
	DefaultIPv6Prefix = rules.DefaultIPv6Prefix
)

// Config configures an Interceptor. The zero value of each field means its
// documented default. Only Rules can change later (SetRules, Watch).
type Config struct {
	// Rules are the rules in force until SetRules or Watch replaces them.
	// Default: none, so every call passes unlimited.
	Rules RuleSet

	// TrustedProxies lists the proxies, as CIDR prefixes ("10.0.0.0/8")
	// or single addresses ("2001:db8::1"), whose forwarding metadata is
	// believed. A call from any other peer is keyed by the peer's
	// address, whatever metadata it sends. Default: none. A prefix of
	// length 0 is refused: it would let every client choose its key.
	TrustedProxies []string
	// ForwardedMetadata is the metadata key the trusted proxies append
	// the address of their peer to. "forwarded" is parsed as RFC 7239 (its
	// for= parameters); any other key as a comma-separated list of
	// addresses, like x-forwarded-for. Only one key is read. Default
	// "x-forwarded-for".
	ForwardedMetadata string
	// IPv4Prefix and IPv6Prefix are the prefix lengths a client address
	// is keyed by: every address of one IPv6 /64 shares one budget by
	// default. Defaults 32 and 64.
	IPv4Prefix, IPv6Prefix int

	// APIKeyMetadata is the metadata key read for rules keyed by API key:
	// incoming metadata on the server, outgoing metadata on the client.
	// Default "x-api-key".
	APIKeyMetadata string
	// VerifyAPIKey, when set, is asked about every API key before it is
	// used as a key; a call whose key it rejects is keyed by its next
	// source (user, then IP). Without it any non-empty value is taken,
	// so a client can pick a fresh budget per call by sending a new key:
	// set it, or authenticate before this interceptor and key by user.
	// Default nil.
	VerifyAPIKey func(key string) bool
	// User returns the authenticated user of a call from its context, for
	// rules keyed by user, and false for an anonymous one. Default nil:
	// no user.
	User func(ctx context.Context) (string, bool)
	// Tier returns the tier of a call ("free", "pro"), which selects among
	// rules that name a Tier; "" is no tier. Default nil: no tier.
	Tier func(ctx context.Context) string

	// NoHeaders stops the server interceptors from sending the
	// ratelimit-policy and ratelimit header metadata. Default false: they
	// are sent. A denial without them is a trailers-only response, which
	// a client's retry policy may retry after the PushbackTrailer's delay;
	// one with them is not retried (gRFC A6: header metadata commits the
	// call). The RetryInfo and the PushbackTrailer are sent either way.
	NoHeaders bool
	// FailFast makes the client interceptors refuse a call over its limit
	// at once, with ResourceExhausted, instead of waiting for admission
	// within the call's deadline. Default false: they wait.
	FailFast bool

	// Prefix starts every key sent to the Limiter, followed by the rule
	// name: "grpc:search:ip:203.0.113.7". At most 64 bytes. Default
	// "grpc:".
	Prefix string
	// Logger receives reloads, rejected rule files, shadow denials (at
	// most one line per rule per second) and Limiter errors. Default
	// slog.Default().
	Logger *slog.Logger
}

// withDefaults copies cfg, fills its defaults and validates it.
func (c Config) withDefaults() (Config, rules.Keys, error) {
	c.ForwardedMetadata = strings.ToLower(cmp.Or(c.ForwardedMetadata, DefaultForwardedMetadata))
	c.APIKeyMetadata = strings.ToLower(cmp.Or(c.APIKeyMetadata, DefaultAPIKeyMetadata))
	b := rules.Base{TrustedProxies: c.TrustedProxies, Forwarded: c.ForwardedMetadata, IPv4Prefix: c.IPv4Prefix,
		IPv6Prefix: c.IPv6Prefix, VerifyAPIKey: c.VerifyAPIKey, Prefix: c.Prefix, Logger: c.Logger}
	keys, err := b.Check(DefaultPrefix, ErrInvalidConfig)
	c.TrustedProxies, c.Prefix, c.Logger = b.TrustedProxies, b.Prefix, b.Logger
	return c, keys, err
}
