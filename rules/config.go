package rules

import (
	"fmt"
	"log/slog"
	"slices"
)

// MaxPrefixLen bounds a middleware's key prefix (Base.Prefix), so that
// every key fits in hybrid.MaxKeyLen whatever the request.
const MaxPrefixLen = 64

// Base is what both middlewares' Configs hold beside their own fields: how
// a client is keyed, the prefix of its keys and the logger. The
// middlewares' Configs document each field.
type Base struct {
	// TrustedProxies are the Config's: CIDR prefixes or addresses.
	TrustedProxies []string
	// Forwarded is httplimit's ForwardedHeader or grpclimit's
	// ForwardedMetadata, in its canonical case; "Forwarded" (in any case)
	// is parsed as RFC 7239.
	Forwarded string
	// IPv4Prefix and IPv6Prefix are the Config's; 0 means
	// DefaultIPv4Prefix and DefaultIPv6Prefix.
	IPv4Prefix, IPv6Prefix int
	// VerifyAPIKey is the Config's; nil takes every API key.
	VerifyAPIKey func(key string) bool
	// Prefix starts every key; at most MaxPrefixLen bytes.
	Prefix string
	// Logger is the Config's; nil means slog.Default().
	Logger *slog.Logger
}

// Check fills b's defaults (Prefix defaultPrefix, Logger slog.Default(),
// the prefix lengths of Keys), copies TrustedProxies so that the caller's
// slice may change, validates b and returns the Keys it describes. Its
// errors wrap invalid, the middleware's ErrInvalidConfig, and name the
// field.
func (b *Base) Check(defaultPrefix string, invalid error) (Keys, error) {
	if b.Prefix == "" {
		b.Prefix = defaultPrefix
	}
	if len(b.Prefix) > MaxPrefixLen {
		return Keys{}, fmt.Errorf("%w: Prefix of %d bytes, at most %d", invalid, len(b.Prefix), MaxPrefixLen)
	}
	if b.Logger == nil {
		b.Logger = slog.Default()
	}
	keys, err := newKeys(b.TrustedProxies, b.Forwarded, b.IPv4Prefix, b.IPv6Prefix, b.VerifyAPIKey)
	if err != nil {
		return keys, fmt.Errorf("%w: %w", invalid, err)
	}
	b.TrustedProxies = slices.Clone(b.TrustedProxies)
	return keys, nil
}
