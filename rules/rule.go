package rules

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hybridlimit/hybridlimit/hybrid"
)

// DefaultMaxDelay is the longest a LeakyBucket rule holds a request when
// its MaxDelay is 0.
const DefaultMaxDelay = time.Second

// DefaultRuleName names RuleSet.Default when it has no name.
const DefaultRuleName = "default"

// MaxNameLen bounds a rule name, which is part of every key.
const MaxNameLen = 64

// Rule is a rule of either middleware: the middlewares' Rule types convert
// to it field by field (Form), Pattern being httplimit's Route or
// grpclimit's Method.
type Rule struct {
	// Name identifies the rule in keys, headers, logs and metrics.
	Name string
	// Pattern is httplimit's Route or grpclimit's Method; empty matches
	// everything.
	Pattern string
	// Tier restricts the rule to one tier; empty applies to every tier.
	Tier string
	// Key is the identities tried, in the fixed order api-key, user, ip.
	Key KeySource
	// Limits are decided together, all or nothing.
	Limits []hybrid.Limit
	// MaxDelay is the longest a LeakyBucket request is held.
	MaxDelay time.Duration
	// Shadow decides and counts but never refuses.
	Shadow bool
	// PerMessage charges each message of a stream as well as its opening
	// (grpclimit only; httplimit never sets it).
	PerMessage bool
}

// RuleSet is the set of rules in force; see the middlewares' RuleSet for
// how a request is matched.
type RuleSet struct {
	Rules   []Rule // the rules with a Pattern or a Tier
	Default *Rule  // the rule of requests no other matches; nil: none
}

// Normalized returns the rule with its defaults filled and Limits copied:
// Key all sources, MaxDelay DefaultMaxDelay, each unnamed limit named
// "<rule>#<index>".
func (r Rule) Normalized() Rule {
	if r.Key == 0 {
		r.Key = keyAll
	}
	if r.MaxDelay == 0 {
		r.MaxDelay = DefaultMaxDelay
	}
	r.Limits = slices.Clone(r.Limits)
	for i := range r.Limits {
		if r.Limits[i].Name == "" {
			r.Limits[i].Name = r.Name + "#" + strconv.Itoa(i)
		}
	}
	return r
}

// Equal reports whether two rules are the same in every field.
func (r Rule) Equal(o Rule) bool {
	return r.Name == o.Name && r.Pattern == o.Pattern && r.Tier == o.Tier && r.Key == o.Key &&
		r.MaxDelay == o.MaxDelay && r.Shadow == o.Shadow && r.PerMessage == o.PerMessage && slices.Equal(r.Limits, o.Limits)
}

// Normalized returns the set with every rule normalized and the default
// rule named.
func (rs RuleSet) Normalized() RuleSet {
	out := RuleSet{Rules: make([]Rule, len(rs.Rules))}
	for i, r := range rs.Rules {
		out.Rules[i] = r.Normalized()
	}
	if rs.Default != nil {
		d := *rs.Default
		if d.Name == "" {
			d.Name = DefaultRuleName
		}
		d = d.Normalized()
		out.Default = &d
	}
	return out
}

// Equal reports whether two sets hold equal rules in the same order.
func (rs RuleSet) Equal(o RuleSet) bool {
	if (rs.Default == nil) != (o.Default == nil) || (rs.Default != nil && !rs.Default.Equal(*o.Default)) {
		return false
	}
	return slices.EqualFunc(rs.Rules, o.Rules, Rule.Equal)
}

// CompiledRule is a rule in force. It is immutable but for its Counters.
type CompiledRule struct {
	// Rule is the rule, normalized (Rule.Normalized).
	Rule
	// KeyPrefix starts the rule's keys: the middleware's prefix, the
	// rule's name and ":".
	KeyPrefix string
	// Policy is the RateLimit-Policy value of the rule (see policy), and
	// Names the policy name of each limit.
	Policy string
	Names  []string
	// Stats counts the rule's outcomes; it is carried over reloads by
	// name.
	Stats *Counters
}

// Counters count one rule's outcomes. Each decision counts once.
type Counters struct {
	// Allowed, Delayed, Denied, ShadowDenied and Errors count the
	// decisions by outcome, as RuleStats reports them.
	Allowed, Delayed, Denied, ShadowDenied, Errors atomic.Int64

	lastLog atomic.Int64 // UnixNano of the last sampled log line
	quiet   atomic.Int64 // lines suppressed since
}

// logEvery samples log lines: at most one per rule per this interval.
const logEvery = time.Second

// Sample reports whether a log line may be written now, and how many were
// suppressed since the last one.
func (s *Counters) Sample(now time.Time) (ok bool, suppressed int64) {
	last := s.lastLog.Load()
	if n := now.UnixNano(); n-last >= int64(logEvery) && s.lastLog.CompareAndSwap(last, n) {
		return true, s.quiet.Swap(0)
	}
	s.quiet.Add(1)
	return false, 0
}

// Dialect is what one middleware's rules differ in: how a pattern (a route
// or a method) is checked, compared and matched, and the names its errors
// and logs use.
type Dialect[M any] struct {
	// Pkg starts log lines: "httplimit".
	Pkg string
	// ErrInvalid is the package's ErrInvalidRules: every rules error
	// wraps it.
	ErrInvalid error
	// Pattern names the field a rule is matched by, in messages: "route".
	Pattern string
	// Check validates one pattern.
	Check func(pattern string) error
	// Shape returns a pattern in a form that two patterns matching the
	// same requests share, so that a tier's rule overrides a generic rule
	// of the same shape.
	Shape func(pattern string) string
	// Build makes the matcher of one scope's rules (never called for
	// none: a scope without rules has the zero M). Its errors wrap
	// ErrInvalid.
	Build func(d *Dialect[M], rules []*CompiledRule) (M, error)
}

// Invalid returns an error wrapping the dialect's ErrInvalid.
func (d *Dialect[M]) Invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{d.ErrInvalid}, args...)...)
}

// tierRules are the rules a request of one tier is matched against.
type tierRules[M any] struct {
	routes M             // the tier's patterned rules and the generic ones
	any    *CompiledRule // the tier's rule without a pattern, or nil
}

// CompiledSet is a RuleSet in force, compiled: immutable once built.
type CompiledSet[M any] struct {
	// Src is the set as given, normalized.
	Src RuleSet
	// Default decides the requests no rule matches; nil for none.
	Default *CompiledRule
	// All are Src.Rules in order, then Default.
	All []*CompiledRule

	generic M
	tiers   map[string]*tierRules[M]
}

// Match returns the rule deciding a request of tier, match being the
// dialect's lookup in one scope's matcher (given the zero M for a scope
// without patterned rules); nil for none.
//
//  1. among the rules of the request's tier and the rules of every tier,
//     the one of the most specific pattern; between equivalent patterns,
//     the rule naming the tier wins;
//  2. else the tier's rule without a pattern;
//  3. else Default;
//  4. else none.
func (s *CompiledSet[M]) Match(tier string, match func(M) *CompiledRule) *CompiledRule {
	if t := s.tiers[tier]; tier != "" && t != nil {
		if rl := match(t.routes); rl != nil {
			return rl
		}
		if t.any != nil {
			return t.any
		}
		return s.Default
	}
	if rl := match(s.generic); rl != nil {
		return rl
	}
	return s.Default
}

// Compile validates rs and builds its matchers. Rules of old with the same
// name keep their counters. warnings are valid but doubtful settings.
func (d *Dialect[M]) Compile(rs RuleSet, prefix string, old *CompiledSet[M]) (_ *CompiledSet[M], warnings []string, _ error) {
	rs = rs.Normalized()
	s := &CompiledSet[M]{Src: rs, tiers: map[string]*tierRules[M]{}}
	prev := map[string]*Counters{}
	if old != nil {
		for _, r := range old.All {
			prev[r.Name] = r.Stats
		}
	}
	seen := map[string]bool{}
	build := func(r Rule, what string) (*CompiledRule, error) {
		if err := checkName(r.Name); err != nil {
			return nil, d.Invalid("%s: %w", what, err)
		}
		if seen[r.Name] {
			return nil, d.Invalid("rule %q given twice", r.Name)
		}
		seen[r.Name] = true
		w, err := d.checkRule(r)
		if err != nil {
			return nil, d.Invalid("rule %q: %w", r.Name, err)
		}
		warnings = append(warnings, w...)
		c := &CompiledRule{Rule: r, KeyPrefix: prefix + r.Name + ":", Stats: prev[r.Name]}
		if c.Stats == nil {
			c.Stats = new(Counters)
		}
		c.Names, c.Policy = policy(r)
		s.All = append(s.All, c)
		return c, nil
	}

	var generic, tiered []*CompiledRule
	for i, r := range rs.Rules {
		c, err := build(r, fmt.Sprintf("rule %d", i+1))
		if err != nil {
			return nil, nil, err
		}
		switch {
		case r.Pattern == "" && r.Tier == "":
			return nil, nil, d.Invalid("rule %q has neither %s nor tier: make it the default rule", r.Name, d.Pattern)
		case r.Pattern == "":
			t := s.tier(r.Tier)
			if t.any != nil {
				return nil, nil, d.Invalid("rules %q and %q both match every %s of tier %q", t.any.Name, r.Name, d.Pattern, r.Tier)
			}
			t.any = c
		case r.Tier == "":
			generic = append(generic, c)
		default:
			s.tier(r.Tier)
			tiered = append(tiered, c)
		}
	}
	if rs.Default != nil {
		if rs.Default.Pattern != "" || rs.Default.Tier != "" {
			return nil, nil, d.Invalid("default rule %q has a %s or a tier", rs.Default.Name, d.Pattern)
		}
		c, err := build(*rs.Default, "default rule")
		if err != nil {
			return nil, nil, err
		}
		s.Default = c
	}

	var err error
	if s.generic, err = d.build(generic); err != nil {
		return nil, nil, err
	}
	for name, t := range s.tiers {
		var own []*CompiledRule
		for _, c := range tiered {
			if c.Tier == name {
				own = append(own, c)
			}
		}
		if len(own) == 0 {
			t.routes = s.generic
			continue
		}
		// A tier's rule overrides a generic rule of an equivalent pattern;
		// any other overlap must be resolvable by the matcher.
		rules := slices.Clone(own)
		for _, g := range generic {
			if !slices.ContainsFunc(own, func(c *CompiledRule) bool { return d.Shape(c.Pattern) == d.Shape(g.Pattern) }) {
				rules = append(rules, g)
			}
		}
		if t.routes, err = d.build(rules); err != nil {
			return nil, nil, err
		}
	}
	return s, warnings, nil
}

// build returns the matcher of rules, the zero M for none.
func (d *Dialect[M]) build(rules []*CompiledRule) (M, error) {
	if len(rules) == 0 {
		var none M
		return none, nil
	}
	return d.Build(d, rules)
}

func (s *CompiledSet[M]) tier(name string) *tierRules[M] {
	t := s.tiers[name]
	if t == nil {
		t = &tierRules[M]{}
		s.tiers[name] = t
	}
	return t
}

// checkName reports a name that cannot be part of a key and a header.
func checkName(name string) error {
	if name == "" || len(name) > MaxNameLen {
		return fmt.Errorf("name %q: want 1 to %d bytes", name, MaxNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("name %q: only letters, digits, '.', '_' and '-' are allowed", name)
		}
	}
	return nil
}

// checkRule validates a normalized rule's key, limits, delay and pattern,
// and warns about a LeakyBucket whose queue outlasts MaxDelay.
func (d *Dialect[M]) checkRule(r Rule) (warnings []string, _ error) {
	if r.Key&^keyAll != 0 {
		return nil, fmt.Errorf("unknown key source %v", r.Key)
	}
	if r.MaxDelay < 0 {
		return nil, fmt.Errorf("negative max delay %v", r.MaxDelay)
	}
	if len(r.Limits) == 0 || len(r.Limits) > hybrid.MaxLimits {
		return nil, fmt.Errorf("%d limits, want 1 to %d", len(r.Limits), hybrid.MaxLimits)
	}
	for i, l := range r.Limits {
		if err := hybrid.CheckLimits(1, l); err != nil {
			return nil, fmt.Errorf("limit %d: %w", i+1, err)
		}
	}
	// Then together, as AllowN checks them (no limit given twice).
	if err := hybrid.CheckLimits(1, r.Limits...); err != nil {
		return nil, err
	}
	for _, l := range r.Limits {
		if l.Algorithm == hybrid.LeakyBucket && !r.Shadow {
			if dl := l.LongestDelay(); dl > r.MaxDelay {
				warnings = append(warnings, fmt.Sprintf(
					"rule %q: %v can hold a request %v, above its max delay %v: requests that would wait longer are denied but take their place in the queue; lower the burst to %d",
					r.Name, l, dl, r.MaxDelay, burstFor(l, r.MaxDelay)))
			}
		}
	}
	if r.Pattern != "" {
		if err := d.Check(r.Pattern); err != nil {
			return nil, fmt.Errorf("%s %q: %w", d.Pattern, r.Pattern, err)
		}
	}
	return warnings, nil
}

// burstFor is the largest burst whose longest delay fits in d.
func burstFor(l hybrid.Limit, d time.Duration) int64 {
	// (b-1)*Period/Rate <= d
	return int64(float64(d)/float64(l.Period)*float64(l.Rate)) + 1
}

// policy returns the policy names of a rule's limits and its
// RateLimit-Policy value: the rule's name for a single limit, the name and
// the limit's index from 0 for several ("search-0", "search-1"); q is the
// Rate and w the Period in whole seconds, rounded up.
func policy(r Rule) (names []string, field string) {
	var b strings.Builder
	for i, l := range r.Limits {
		name := r.Name
		if len(r.Limits) > 1 {
			name += "-" + strconv.Itoa(i)
		}
		names = append(names, name)
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(name)) // names are plain ASCII: a valid sf-string
		b.WriteString(";q=")
		b.WriteString(strconv.FormatInt(l.Rate, 10))
		b.WriteString(";w=")
		b.WriteString(strconv.FormatInt(max(CeilSeconds(l.Period), 1), 10))
	}
	return names, b.String()
}

// Form converts a middleware's Rule, R, to a Rule and back: a Rule is
// the middleware's with its pattern field (httplimit's Route, grpclimit's
// Method) named Pattern.
type Form[R any] struct {
	// To converts a middleware's rule, From converts one back.
	To   func(R) Rule
	From func(Rule) R
}

// Set returns a middleware's rules and default rule as a RuleSet.
func (f Form[R]) Set(rules []R, def *R) RuleSet {
	out := RuleSet{Rules: make([]Rule, len(rules))}
	for i, r := range rules {
		out.Rules[i] = f.To(r)
	}
	if def != nil {
		d := f.To(*def)
		out.Default = &d
	}
	return out
}

// Split returns rs as a middleware's rules and default rule.
func (f Form[R]) Split(rs RuleSet) (rules []R, def *R) {
	rules = make([]R, len(rs.Rules))
	for i, r := range rs.Rules {
		rules[i] = f.From(r)
	}
	if rs.Default != nil {
		d := f.From(*rs.Default)
		def = &d
	}
	return rules, def
}
