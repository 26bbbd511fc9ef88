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
	// DefaultFailureRatio is the default of Config.FailureRatio.
	DefaultFailureRatio = 0.5
	// DefaultMinCalls is the default of Config.MinCalls.
	DefaultMinCalls = 20
	// DefaultWindow is the default of Config.Window.
	DefaultWindow = 10 * time.Second
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

	// FailureRatio also opens the breaker: once at least MinCalls outcomes
	// were reported in the current Window, a Failure that brings the share
	// of failures among them to FailureRatio or more opens it. This catches
	// a node that fails often but never ConsecutiveFailures times in a row
	// (a connection cut after a few replies), which would otherwise keep
	// being asked, and reconnected to, at every call. In (0, 1]. Default
	// 0.5 (DefaultFailureRatio).
	FailureRatio float64
	// MinCalls is the number of outcomes in the Window before FailureRatio
	// applies. Default 20 (DefaultMinCalls).
	MinCalls uint32
	// Window is the period over which FailureRatio is measured; its counts
	// start afresh at its end and when the breaker closes. Default 10s
	// (DefaultWindow).
	Window time.Duration

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

// WithDefaults returns a copy of c with its defaults filled in, as New
// applies them to the breaker called name, or an error naming the first
// invalid field. A user of New that needs the settings it will run with
// (an OpenTimeout to report) reads them here rather than applying the
// defaults a second time.
func (c Config) WithDefaults(name string) (Config, error) {
	if c.OpenTimeout < 0 {
		return c, fmt.Errorf("%w: %q: OpenTimeout %v is negative (0 means the default, %v)",
			ErrInvalidConfig, name, c.OpenTimeout, DefaultOpenTimeout)
	}
	if c.ConsecutiveFailures == 0 {
		c.ConsecutiveFailures = DefaultConsecutiveFailures
	}
	if c.FailureRatio < 0 || c.FailureRatio > 1 || c.FailureRatio != c.FailureRatio {
		return c, fmt.Errorf("%w: %q: FailureRatio %v outside (0, 1]", ErrInvalidConfig, name, c.FailureRatio)
	}
	if c.Window < 0 {
		return c, fmt.Errorf("%w: %q: Window %v is negative", ErrInvalidConfig, name, c.Window)
	}
	if c.FailureRatio == 0 {
		c.FailureRatio = DefaultFailureRatio
	}
	if c.MinCalls == 0 {
		c.MinCalls = DefaultMinCalls
	}
	if c.Window == 0 {
		c.Window = DefaultWindow
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
