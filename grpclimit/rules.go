package grpclimit

import (
	"errors"
	"strings"
	"time"

	"github.com/hybridlimit/hybridlimit/hybrid"
	"github.com/hybridlimit/hybridlimit/rules"
)

// DefaultMaxDelay is the longest a LeakyBucket rule holds a call when its
// MaxDelay is 0.
const DefaultMaxDelay = rules.DefaultMaxDelay

// DefaultRuleName names RuleSet.Default when it has no name.
const DefaultRuleName = rules.DefaultRuleName

// KeySource is the set of identities a rule keys clients by: the type
// httplimit and grpclimit share (package rules). The zero value means all
// three, KeyAPIKey|KeyUser|KeyIP.
type KeySource = rules.KeySource

// The sources a rule may key by, in priority order (rules.KeyAPIKey …).
const (
	KeyAPIKey = rules.KeyAPIKey
	KeyUser   = rules.KeyUser
	KeyIP     = rules.KeyIP
)

// Rule limits the calls it matches. A call is decided by one rule (see
// RuleSet), with all the rule's limits charged together.
type Rule struct {
	// Name identifies the rule: it is part of every key the rule sends to
	// the Limiter, so two rules never share a budget and a rule keeps its
	// budgets across reloads for as long as it keeps its name (and
	// limits). It also names the rule in metadata, logs and metrics. 1 to
	// 64 bytes of letters, digits, '.', '_' and '-'; unique in a RuleSet.
	Name string
	// Method is a full method name, "/pkg.Service/Method", or a whole
	// service, "/pkg.Service/*". Empty matches every method, less
	// specifically than any pattern.
	Method string
	// Tier restricts the rule to calls of that tier (Config.Tier). Empty
	// applies to every tier.
	Tier string
	// Key says what identifies the client. Zero means all three sources,
	// KeyAPIKey|KeyUser|KeyIP.
	Key KeySource
	// Limits are enforced together, all or nothing, in one decision: 1 to
	// 16 distinct valid limits. A limit without a Name is named after the
	// rule and its index ("login#0"), so that a reload that changes its
	// rate, period or burst keeps every client's budget.
	Limits []hybrid.Limit
	// MaxDelay is the longest a call admitted by a LeakyBucket limit is
	// held (its Result.Delay). One that would wait longer is refused with
	// ResourceExhausted, its RetryInfo the time until a call would wait no
	// longer, and its place in the queue is given back (Limiter.Refund),
	// as it is when the call ends while held. Client interceptors that
	// wait (without Config.FailFast) hold an outgoing call up to its
	// deadline instead. Zero means DefaultMaxDelay (1s).
	MaxDelay time.Duration
	// Shadow makes the rule a dry run: calls are decided, counted and
	// denials logged, but every call passes, without rate-limit metadata
	// and without a delay.
	Shadow bool
	// PerMessage charges each message of a stream, as well as its
	// opening: each message a server stream receives (after it arrives;
	// a refused one fails RecvMsg with ResourceExhausted), each message a
	// client stream sends (before it goes). Unary calls are charged once
	// whatever it says.
	PerMessage bool
}

// RuleSet is the set of rules in force. Each call is decided by one rule:
//
//  1. among the rules of the call's tier and the rules of every tier, the
//     one with the most specific Method: a full method name, else its
//     service ("/pkg.Service/*"); between equal methods, the rule naming
//     the tier wins;
//  2. else the tier's rule without Method;
//  3. else Default;
//  4. else none: the call passes unlimited, without metadata.
type RuleSet struct {
	// Rules are the rules by method and tier. A rule with neither Method
	// nor Tier belongs in Default.
	Rules []Rule
	// Default decides the calls no rule matches; it has neither Method
	// nor Tier. Its Name defaults to "default". Nil: such calls pass.
	Default *Rule
}

// Validate reports whether rs can be enforced, with the same checks New
// and SetRules make. Its errors wrap ErrInvalidRules.
func (rs RuleSet) Validate() error {
	_, _, err := dialect.Compile(rs.shared(), DefaultPrefix, nil)
	return err
}

// form converts a Rule, its Method the Pattern, to a rules.Rule and back.
var form = rules.Form[Rule]{
	To: func(r Rule) rules.Rule {
		return rules.Rule{Name: r.Name, Pattern: r.Method, Tier: r.Tier, Key: r.Key,
			Limits: r.Limits, MaxDelay: r.MaxDelay, Shadow: r.Shadow, PerMessage: r.PerMessage}
	},
	From: func(r rules.Rule) Rule {
		return Rule{Name: r.Name, Method: r.Pattern, Tier: r.Tier, Key: r.Key,
			Limits: r.Limits, MaxDelay: r.MaxDelay, Shadow: r.Shadow, PerMessage: r.PerMessage}
	},
}

// shared converts the set to its rules form, and ruleSetOf back.
func (rs RuleSet) shared() rules.RuleSet { return form.Set(rs.Rules, rs.Default) }

func ruleSetOf(rs rules.RuleSet) (out RuleSet) {
	out.Rules, out.Default = form.Split(rs)
	return out
}

// rule is a compiled Rule; ruleSet a compiled RuleSet.
type (
	rule    = rules.CompiledRule
	ruleSet = rules.CompiledSet[*methods]
)

// dialect is what grpclimit's rules are: methods and services.
var dialect = &rules.Dialect[*methods]{
	Pkg:        "grpclimit",
	ErrInvalid: ErrInvalidRules,
	Pattern:    "method",
	Check:      checkMethod,
	Shape:      func(m string) string { return m },
	Build:      newMethods,
}

// match returns the rule deciding a call of fullMethod, or nil.
func match(s *ruleSet, fullMethod, tier string) *rule {
	return s.Match(tier, func(m *methods) *rule { return m.match(fullMethod) })
}

// methods finds the rule of a full method name, else of its service.
type methods struct {
	exact   map[string]*rule // by "/pkg.Service/Method"
	service map[string]*rule // by "/pkg.Service/"
}

func (m *methods) match(fullMethod string) *rule {
	if m == nil {
		return nil
	}
	if rl := m.exact[fullMethod]; rl != nil {
		return rl
	}
	if i := strings.LastIndexByte(fullMethod, '/'); i > 0 {
		return m.service[fullMethod[:i+1]]
	}
	return nil
}

// checkMethod accepts "/pkg.Service/Method" and "/pkg.Service/*".
func checkMethod(p string) error {
	svc, method, ok := strings.Cut(strings.TrimPrefix(p, "/"), "/")
	switch {
	case !strings.HasPrefix(p, "/") || !ok:
		return errors.New(`want "/pkg.Service/Method" or "/pkg.Service/*"`)
	case svc == "" || strings.ContainsAny(svc, "*/"):
		return errors.New("empty or malformed service name")
	case method == "" || strings.Contains(method, "/") || (method != "*" && strings.Contains(method, "*")):
		return errors.New(`empty or malformed method name (a whole service is "/pkg.Service/*")`)
	case strings.ContainsFunc(p, func(c rune) bool { return c <= ' ' || c > '~' }):
		return errors.New("space or a character other than printable ASCII")
	}
	return nil
}

// newMethods indexes the rules by method; two rules of one method in one
// scope are refused.
func newMethods(d *rules.Dialect[*methods], rules []*rule) (*methods, error) {
	m := &methods{exact: map[string]*rule{}, service: map[string]*rule{}}
	for _, c := range rules {
		table, key := m.exact, c.Pattern
		if svc, ok := strings.CutSuffix(c.Pattern, "*"); ok {
			table, key = m.service, svc
		}
		if o := table[key]; o != nil {
			return nil, d.Invalid("method %q of rule %q is also the method of rule %q", c.Pattern, c.Name, o.Name)
		}
		table[key] = c
	}
	return m, nil
}
