package breaker

import (
	"fmt"
	"log/slog"
	"time"
)

// Defaults of Config.
const (
	// DefaultConsecutiveFailures is the default of Config.ConsecutiveFailures.
	DefaultConsecutiveFailures = 5
	// DefaultOpenTimeout is the default of Config.OpenTimeout.
	DefaultOpenTimeout = time.Second
	// DefaultHalfOpenProbes is the default of Config.HalfOpenProbes.
	DefaultHalfOpenProbes = 1
)

// Config configures a Breaker. The zero value is ready to use: every zero
// field means its documented default.
type Config struct {
	// ConsecutiveFailures is the number of consecutive Failure outcomes, in
	// the closed state, that open the breaker: with 5, the fifth failure in a
	// row opens it and four do not. A Success resets the run to zero; an
	// Ignore neither extends nor resets it. Any value from 1 up is accepted.
	// Default 5 (DefaultConsecutiveFailures).
	ConsecutiveFailures uint32

	// OpenTimeout is how long the breaker stays open, rejecting every call,
	// before it lets probes through (half-open). The breaker is half-open
	// once strictly more than OpenTimeout has passed since it opened; the
	// change is seen (and logged) by the first Allow, State or done call
	// after that. Negative values are an error. Default 1s
	// (DefaultOpenTimeout); gobreaker's own default, which this replaces,
	// is 60s.
	OpenTimeout time.Duration

	// HalfOpenProbes is both the number of calls admitted while half-open
	// and the number of consecutive Success outcomes among them that close
	// the breaker again (gobreaker's MaxRequests). One Failure among them
	// reopens it at once. An Ignore frees its slot for another probe and
	// counts neither way. Default 1 (DefaultHalfOpenProbes).
	HalfOpenProbes uint32

	// Logger receives one record per state change: Warn when the breaker
	// opens, Info when it half-opens or closes, with the breaker's name, the
	// old and new state and the counters (see Stats). Records are written
	// outside gobreaker's lock, by the goroutine whose Allow, done or State
	// call observed the change, after the breaker has been updated; a slow
	// or re-entrant handler delays only that goroutine. Set it to
	// slog.New(slog.DiscardHandler) to silence the breaker.
	// Default slog.Default() as it is when New is called: state changes are
	// rare and operators want to see them.
	Logger *slog.Logger
}

// withDefaults returns a copy of c with defaults filled in, or an error
// naming the first invalid field.
func (c Config) withDefaults(name string) (Config, error) {
	if c.OpenTimeout < 0 {
		return c, fmt.Errorf("%w: %q: OpenTimeout %v is negative (0 means the default, %v)",
			ErrInvalidConfig, name, c.OpenTimeout, DefaultOpenTimeout)
	}
	if c.ConsecutiveFailures == 0 {
		c.ConsecutiveFailures = DefaultConsecutiveFailures
	}
	if c.OpenTimeout == 0 {
		c.OpenTimeout = DefaultOpenTimeout
	}
	if c.HalfOpenProbes == 0 {
		c.HalfOpenProbes = DefaultHalfOpenProbes
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}
