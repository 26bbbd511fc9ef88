package httplimit

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/hybridlimit/hybridlimit/hybrid"
	"github.com/hybridlimit/hybridlimit/rules"
)

// Middleware limits the requests of the handlers it wraps with the rules in
// force. It is safe for concurrent use; the rules can be replaced while
// requests are served (SetRules, Watch), each request seeing one rule set.
type Middleware struct {
	cfg  Config
	keys rules.Keys
	eng  *rules.Engine[*matcher]
	now  func() time.Time
}

// New returns a Middleware deciding with lim under cfg. It validates cfg,
// its rules included; errors wrap ErrInvalidConfig or ErrInvalidRules. The
// Middleware does not close lim.
func New(lim *hybrid.Limiter, cfg Config) (*Middleware, error) {
	if lim == nil {
		return nil, fmt.Errorf("%w: nil Limiter", ErrInvalidConfig)
	}
	cfg, keys, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	m := &Middleware{cfg: cfg, keys: keys, now: time.Now}
	m.eng, err = rules.NewEngine(dialect, lim, cfg.Rules.shared(), cfg.Prefix, cfg.Logger, func() time.Time { return m.now() })
	if err != nil {
		return nil, err
	}
	m.cfg.Rules = RuleSet{} // the compiled copy is the one in force
	return m, nil
}

// Rules returns a copy of the rules in force, with their defaults filled.
func (m *Middleware) Rules() RuleSet { return ruleSetOf(m.eng.Rules().Src.Normalized()) }

// SetRules validates rs and puts it in force atomically: requests already
// decided keep their rule, later ones see the new set. Rules that keep
// their name keep their keys, so their budgets in Redis, and their
// counters. An invalid set is refused with an error wrapping
// ErrInvalidRules, and the rules in force stay. A set equal to the one in
// force changes nothing.
func (m *Middleware) SetRules(rs RuleSet) error {
	_, err := m.eng.Swap(rs.shared())
	return err
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
	rl := match(m.eng.Rules(), r, tier)
	if rl == nil {
		next.ServeHTTP(w, r)
		return
	}
	o := m.eng.Admit(r.Context(), m.key(r, rl), rl, func() []any { return []any{"method", r.Method, "path", r.URL.Path} })
	if !o.Enforced {
		next.ServeHTTP(w, r) // a shadow rule, or the Limiter failed
		return
	}
	m.setHeaders(w.Header(), rl, o.Result, o.Decision)
	switch {
	case !o.Decision.Allowed:
		m.deny(w, rl, o.Result, o.Decision)
	case !o.Gone: // a request whose client left while held is dropped
		next.ServeHTTP(w, r)
	}
}

// Stats is a snapshot of the counters, and RuleStats one rule's: the
// types grpclimit and httplimit share (package rules).
type (
	Stats     = rules.Stats
	RuleStats = rules.RuleStats
)

// Stats returns a snapshot of the counters.
func (m *Middleware) Stats() Stats { return m.eng.Stats() }

// Watch puts the rules file at path in force (see ParseRules), then again
// each time it changes, until ctx ends; it returns nil then, having stopped
// every goroutine it started. It returns an error only when the directory
// cannot be watched.
//
// Watch watches the file's directory, not the file, so that a save by
// rename (most editors), a removal followed by a new file, and the symlink
// swap of a Kubernetes ConfigMap volume are all seen. On each change it
// reads the file; content identical to the last read is ignored. A file
// that does not parse or validate is logged as an error and counted
// (Stats.ReloadErrors), and the rules in force stay; so do they while the
// file is missing (logged as a warning). A valid file is put in force with
// SetRules: atomically, and rules that keep their name keep their budgets
// and counters.
//
// Watch blocks; run it in a goroutine:
//
//	go func() {
//		if err := mw.Watch(ctx, "rules.yaml"); err != nil {
//			log.Print(err)
//		}
//	}()
func (m *Middleware) Watch(ctx context.Context, path string) error {
	return m.eng.Watch(ctx, path, parse)
}
