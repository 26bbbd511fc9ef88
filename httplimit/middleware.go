package httplimit

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hybridlimit/hybridlimit/hybrid"
)

// Middleware limits the requests of the handlers it wraps with the rules in
// force. It is safe for concurrent use; the rules can be replaced while
// requests are served (SetRules, Watch), each request seeing one rule set.
type Middleware struct {
	lim   *hybrid.Limiter
	cfg   Config
	ip    resolver
	rules atomic.Pointer[ruleSet]
	mu    sync.Mutex // serializes rule swaps, so counters carry over exactly
	now   func() time.Time

	reloads, reloadErrors atomic.Int64
}

// New returns a Middleware deciding with lim under cfg. It validates cfg,
// its rules included; errors wrap ErrInvalidConfig or ErrInvalidRules. The
// Middleware does not close lim.
func New(lim *hybrid.Limiter, cfg Config) (*Middleware, error) {
	if lim == nil {
		return nil, fmt.Errorf("%w: nil Limiter", ErrInvalidConfig)
	}
	cfg, trusted, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	rs, warnings, err := compile(cfg.Rules, cfg.Prefix, nil)
	if err != nil {
		return nil, err
	}
	cfg.Rules = RuleSet{} // the compiled copy is the one in force
	m := &Middleware{lim: lim, cfg: cfg, ip: newResolver(trusted, cfg.ForwardedHeader), now: time.Now}
	m.rules.Store(rs)
	m.warn(warnings)
	return m, nil
}

// Rules returns a copy of the rules in force, with their defaults filled.
func (m *Middleware) Rules() RuleSet { return m.rules.Load().src.normalized() }

// SetRules validates rs and puts it in force atomically: requests already
// decided keep their rule, later ones see the new set. Rules that keep
// their name keep their keys, so their budgets in Redis, and their
// counters. An invalid set is refused with an error wrapping
// ErrInvalidRules, and the rules in force stay. A set equal to the one in
// force changes nothing.
func (m *Middleware) SetRules(rs RuleSet) error {
	_, err := m.swap(rs)
	return err
}

// swap compiles rs and installs it; changed is false when rs equals the
// rules in force. It counts reloads and their failures.
func (m *Middleware) swap(rs RuleSet) (changed bool, err error) {
	var warnings []string
	defer func() { m.warn(warnings) }() // logged outside the lock
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.rules.Load()
	c, warnings, err := compile(rs, m.cfg.Prefix, old)
	if err != nil {
		m.reloadErrors.Add(1)
		return false, err
	}
	if c.src.equal(old.src) {
		warnings = nil
		return false, nil
	}
	m.rules.Store(c)
	m.reloads.Add(1)
	return true, nil
}

func (m *Middleware) warn(warnings []string) {
	for _, w := range warnings {
		m.cfg.Logger.Warn("httplimit: " + w)
	}
}

// Wrap returns a handler that decides each request with the rule that
// matches it (see RuleSet) before handing it to next:
//
//   - allowed: next serves it, with the rate-limit headers set;
//   - allowed by a LeakyBucket with a Delay: it is held for the Delay
//     first (up to the rule's MaxDelay, else denied; a request whose
//     client goes away meanwhile is dropped);
//   - denied: 429 Too Many Requests, with Retry-After in whole seconds
//     (rounded up, at least 1), the rate-limit headers, and an RFC 9457
//     application/problem+json body of the draft's "quota-exceeded" type;
//   - shadow rule: next serves it whatever the decision;
//   - no rule matches, or the Limiter fails (it only does after Close):
//     next serves it unlimited.
func (m *Middleware) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.serve(w, r, next)
	})
}

func (m *Middleware) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	tier := ""
	if m.cfg.Tier != nil {
		tier = m.cfg.Tier(r)
	}
	rl := m.rules.Load().match(r, tier)
	if rl == nil {
		next.ServeHTTP(w, r)
		return
	}
	key := m.key(r, rl)
	res, err := m.lim.AllowN(r.Context(), key, 1, rl.Limits...)
	if err != nil {
		rl.stats.errors.Add(1)
		if ok, n := rl.stats.sample(m.now()); ok {
			m.cfg.Logger.Error("httplimit: limiter failed; request passes", "rule", rl.Name, "err", err, "suppressed", n)
		}
		next.ServeHTTP(w, r)
		return
	}
	if rl.Shadow {
		if res.Allowed {
			rl.stats.allowed.Add(1)
		} else {
			rl.stats.shadowDenied.Add(1)
			if ok, n := rl.stats.sample(m.now()); ok {
				m.cfg.Logger.Info("httplimit: shadow rule would deny", "rule", rl.Name,
					"method", r.Method, "path", r.URL.Path, "limit", res.Limit.String(),
					"retry_after", res.RetryAfter, "source", res.Source.String(), "suppressed", n)
			}
		}
		next.ServeHTTP(w, r)
		return
	}
	d := rl.decide(res)
	m.setHeaders(w.Header(), rl, res, d)
	if !d.allowed {
		rl.stats.denied.Add(1)
		if res.Allowed {
			// Admitted, but held too long: its place in the queue goes
			// back, as it will not be served.
			m.refund(r, key, rl)
		}
		m.deny(w, rl, res, d)
		return
	}
	if res.Delay > 0 {
		rl.stats.delayed.Add(1)
		t := time.NewTimer(res.Delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			m.refund(r, key, rl) // the client left: it will not be served
			return
		}
	} else {
		rl.stats.allowed.Add(1)
	}
	next.ServeHTTP(w, r)
}

// refund gives back the unit a request took and will not use, even when
// its client has left (the call is bounded by the Limiter's Timeout).
func (m *Middleware) refund(r *http.Request, key string, rl *rule) {
	if err := m.lim.Refund(context.WithoutCancel(r.Context()), key, 1, rl.Limits...); err != nil {
		m.cfg.Logger.Error("httplimit: refund failed", "rule", rl.Name, "err", err)
	}
}

// decision is the Middleware's answer to a request.
type decision struct {
	allowed bool
	// retry is, when denied, how long until the request would pass: the
	// Limiter's RetryAfter; for a Delay above MaxDelay, the excess: the
	// request's place in the queue is given back (Limiter.Refund).
	retry time.Duration
}

func (rl *rule) decide(res hybrid.Result) decision {
	switch {
	case !res.Allowed:
		return decision{retry: res.RetryAfter}
	case res.Delay > rl.MaxDelay:
		return decision{retry: res.Delay - rl.MaxDelay}
	}
	return decision{allowed: true}
}

// Stats is a snapshot of a Middleware's counters.
type Stats struct {
	// Reloads counts the rule sets put in force after New, by SetRules
	// or Watch; ReloadErrors those refused as invalid (a rules file that
	// does not parse or validate, or a SetRules error). A file that is
	// missing is logged but not counted.
	Reloads, ReloadErrors int64
	// Rules has one entry per rule in force, in order, Default last.
	// Counts of a rule are kept across reloads for as long as its name is.
	Rules []RuleStats
}

// RuleStats counts one rule's requests by outcome. Each request counts
// once.
type RuleStats struct {
	// Name and Shadow are the rule's.
	Name   string
	Shadow bool
	// Allowed: passed at once. Delayed: passed after a LeakyBucket delay.
	// Denied: answered 429. ShadowDenied: denied by a shadow rule, and
	// passed. Errors: the Limiter returned an error (only after its
	// Close), and the request passed.
	Allowed, Delayed, Denied, ShadowDenied, Errors int64
}

// Stats returns a snapshot of the counters.
func (m *Middleware) Stats() Stats {
	rs := m.rules.Load()
	s := Stats{Reloads: m.reloads.Load(), ReloadErrors: m.reloadErrors.Load(), Rules: make([]RuleStats, 0, len(rs.all))}
	for _, r := range rs.all {
		s.Rules = append(s.Rules, RuleStats{
			Name:         r.Name,
			Shadow:       r.Shadow,
			Allowed:      r.stats.allowed.Load(),
			Delayed:      r.stats.delayed.Load(),
			Denied:       r.stats.denied.Load(),
			ShadowDenied: r.stats.shadowDenied.Load(),
			Errors:       r.stats.errors.Load(),
		})
	}
	return s
}
