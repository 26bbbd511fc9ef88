package rules

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hybridlimit/hybridlimit/hybrid"
)

// Engine is what a middleware decides with: the Limiter, the rules in
// force and their counters. It is safe for concurrent use; the rules can
// be replaced while requests are decided (Swap, Watch), each request
// seeing one rule set.
type Engine[M any] struct {
	d      *Dialect[M]
	lim    *hybrid.Limiter
	prefix string
	log    *slog.Logger
	// now is the clock of the log sampler (a middleware's tests pin it).
	now func() time.Time

	rules atomic.Pointer[CompiledSet[M]]
	mu    sync.Mutex // serializes rule swaps, so counters carry over exactly

	reloads, reloadErrors atomic.Int64
}

// NewEngine compiles rs and returns an Engine deciding with lim; keys
// start with prefix. now is read only to sample log lines. The warnings
// of the rules are logged.
func NewEngine[M any](d *Dialect[M], lim *hybrid.Limiter, rs RuleSet, prefix string, log *slog.Logger, now func() time.Time) (*Engine[M], error) {
	s, warnings, err := d.Compile(rs, prefix, nil)
	if err != nil {
		return nil, err
	}
	e := &Engine[M]{d: d, lim: lim, prefix: prefix, log: log, now: now}
	e.rules.Store(s)
	e.warn(warnings)
	return e, nil
}

// Rules returns the compiled rules in force.
func (e *Engine[M]) Rules() *CompiledSet[M] { return e.rules.Load() }

// Limiter returns the Limiter the Engine decides with.
func (e *Engine[M]) Limiter() *hybrid.Limiter { return e.lim }

// Swap compiles rs and puts it in force atomically; changed is false when
// rs equals the rules in force. Rules that keep their name keep their
// counters. It counts reloads and their failures.
func (e *Engine[M]) Swap(rs RuleSet) (changed bool, err error) {
	var warnings []string
	defer func() { e.warn(warnings) }() // logged outside the lock
	e.mu.Lock()
	defer e.mu.Unlock()
	old := e.rules.Load()
	c, warnings, err := e.d.Compile(rs, e.prefix, old)
	if err != nil {
		e.reloadErrors.Add(1)
		return false, err
	}
	if c.Src.Equal(old.Src) {
		warnings = nil
		return false, nil
	}
	e.rules.Store(c)
	e.reloads.Add(1)
	return true, nil
}

func (e *Engine[M]) warn(warnings []string) {
	for _, w := range warnings {
		e.log.Warn(e.d.Pkg + ": " + w)
	}
}

// Outcome is how one request fared under its rule.
type Outcome struct {
	// Result is the Limiter's answer; zero when it failed.
	Result hybrid.Result
	// Decision is the rule's answer, meaningful when Enforced.
	Decision Decision
	// Enforced is false when the request passes whatever its decision: a
	// shadow rule, or a Limiter error. Then no rate-limit fields are sent.
	Enforced bool
	// Gone reports that ctx ended while the request was held for its
	// Delay; its unit was given back, and it must not be served.
	Gone bool
}

// Admit decides one unit for key under rl, counts the outcome, and holds an
// admitted LeakyBucket request for its Delay:
//
//   - Limiter error (only after its Close): counted, logged (sampled), and
//     the request passes unenforced;
//   - shadow rule: counted, a would-be denial logged (sampled, with the
//     attributes attrs returns), and the request passes unenforced;
//   - denied, or a Delay above the rule's MaxDelay: counted, the unit of an
//     admitted request given back;
//   - a Delay: counted as delayed and held; a request whose ctx ends
//     meanwhile is Gone, its unit given back.
func (e *Engine[M]) Admit(ctx context.Context, key string, rl *CompiledRule, attrs func() []any) Outcome {
	res, err := e.lim.AllowN(ctx, key, 1, rl.Limits...)
	if err != nil {
		e.Failed(rl, err)
		return Outcome{}
	}
	if rl.Shadow {
		if res.Allowed {
			rl.Stats.Allowed.Add(1)
		} else {
			rl.Stats.ShadowDenied.Add(1)
			if ok, n := rl.Stats.Sample(e.now()); ok {
				args := append([]any{"rule", rl.Name}, attrs()...)
				args = append(args, "limit", res.Limit.String(), "retry_after", res.RetryAfter,
					"source", res.Source.String(), "suppressed", n)
				e.log.Info(e.d.Pkg+": shadow rule would deny", args...)
			}
		}
		return Outcome{Result: res}
	}
	o := Outcome{Result: res, Decision: rl.Decide(res), Enforced: true}
	if !o.Decision.Allowed {
		rl.Stats.Denied.Add(1)
		if res.Allowed {
			// Admitted, but held too long: its place in the queue goes
			// back, as it will not be served.
			e.Refund(ctx, key, rl)
		}
		return o
	}
	if res.Delay <= 0 {
		rl.Stats.Allowed.Add(1)
		return o
	}
	rl.Stats.Delayed.Add(1)
	if !e.Hold(ctx, key, rl, res.Delay) {
		o.Gone = true
	}
	return o
}

// Failed counts a Limiter error under rl and logs it (sampled); the
// request passes.
func (e *Engine[M]) Failed(rl *CompiledRule, err error) {
	rl.Stats.Errors.Add(1)
	if ok, n := rl.Stats.Sample(e.now()); ok {
		e.log.Error(e.d.Pkg+": limiter failed; request passes", "rule", rl.Name, "err", err, "suppressed", n)
	}
}

// Hold waits for d, and reports false when ctx ended first; the unit the
// request took under rl is then given back.
func (e *Engine[M]) Hold(ctx context.Context, key string, rl *CompiledRule, d time.Duration) bool {
	t := time.NewTimer(d)
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		t.Stop()
		e.Refund(ctx, key, rl) // the client left: it will not be served
		return false
	}
}

// Refund gives back the unit a request took and will not use, even when
// its client has left (the call is bounded by the Limiter's Timeout).
func (e *Engine[M]) Refund(ctx context.Context, key string, rl *CompiledRule) {
	if err := e.lim.Refund(context.WithoutCancel(ctx), key, 1, rl.Limits...); err != nil {
		e.log.Error(e.d.Pkg+": refund failed", "rule", rl.Name, "err", err)
	}
}

// Stats returns a snapshot of the counters: one entry per rule in force,
// in order, Default last.
func (e *Engine[M]) Stats() Stats {
	rs := e.rules.Load()
	s := Stats{Reloads: e.reloads.Load(), ReloadErrors: e.reloadErrors.Load(), Rules: make([]RuleStats, 0, len(rs.All))}
	for _, r := range rs.All {
		s.Rules = append(s.Rules, RuleStats{
			Name:         r.Name,
			Shadow:       r.Shadow,
			Allowed:      r.Stats.Allowed.Load(),
			Delayed:      r.Stats.Delayed.Load(),
			Denied:       r.Stats.Denied.Load(),
			ShadowDenied: r.Stats.ShadowDenied.Load(),
			Errors:       r.Stats.Errors.Load(),
		})
	}
	return s
}
