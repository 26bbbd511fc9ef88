package httplimit

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/hybridlimit/hybridlimit/hybrid"
	"github.com/hybridlimit/hybridlimit/rules"
)

// DefaultMaxDelay is the longest a LeakyBucket rule holds a request when
// its MaxDelay is 0.
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

// Rule limits the requests it matches. A request is decided by one rule
// (see RuleSet), with all the rule's limits charged together.
type Rule struct {
	// Name identifies the rule: it is part of every key the rule sends to
	// the Limiter, so two rules never share a budget and a rule keeps its
	// budgets across reloads for as long as it keeps its name (and
	// limits). It also names the rule in headers, logs and metrics. 1 to
	// 64 bytes of letters, digits, '.', '_' and '-'; unique in a RuleSet.
	Name string
	// Route is a net/http.ServeMux pattern: "[METHOD ][HOST]/[PATH]", with
	// wildcards, for example "POST api.example.com/v1/items/{id}" (the
	// patterns of Go 1.22: not available under GODEBUG=httpmuxgo121=1).
	// Empty matches every route, less specifically than any pattern (even
	// "/").
	Route string
	// Tier restricts the rule to requests of that tier (Config.Tier).
	// Empty applies to every tier.
	Tier string
	// Key says what identifies the client. Zero means all three sources,
	// KeyAPIKey|KeyUser|KeyIP.
	Key KeySource
	// Limits are enforced together, all or nothing, in one decision: 1 to
	// 16 distinct valid limits. A limit without a Name is named after the
	// rule and its index ("login#0"), so that a reload that changes its
	// rate, period or burst keeps every client's budget (hybrid.Limit's
	// Name: the units a client has used stay used, at most the new
	// capacity). Name limits yourself to keep budgets when you reorder
	// them.
	Limits []hybrid.Limit
	// MaxDelay is the longest a request admitted by a LeakyBucket limit
	// is held (its Result.Delay). One that would wait longer is answered
	// 429, with Retry-After the time until a request would wait no longer,
	// and its place in the queue is given back (Limiter.Refund), as it is
	// when its client leaves while held. A Burst above
	// MaxDelay×Rate/Period+1 admits requests only to refuse them, a round
	// trip each: New and SetRules log a warning. Zero means
	// DefaultMaxDelay (1s).
	MaxDelay time.Duration
	// Shadow makes the rule a dry run: requests are decided, counted and
	// denials logged, but every request passes, without rate-limit headers
	// and without a delay.
	Shadow bool
}

// RuleSet is the set of rules in force. Each request is decided by one rule:
//
//  1. among the rules of the request's tier and the rules of every tier,
//     the one with the most specific Route, as http.ServeMux ranks
//     patterns; between equivalent routes, the rule naming the tier wins;
//  2. else the tier's rule without Route;
//  3. else Default;
//  4. else none: the request passes unlimited, without headers.
//
// A request whose path ServeMux would redirect (unclean, or missing a
// trailing slash) is decided by the rule of the path it redirects to.
type RuleSet struct {
	// Rules are the routed and tiered rules. A rule with neither Route
	// nor Tier belongs in Default.
	Rules []Rule
	// Default decides the requests no rule matches; it has neither Route
	// nor Tier. Its Name defaults to "default". Nil: such requests pass.
	Default *Rule
}

// Validate reports whether rs can be enforced, with the same checks New
// and SetRules make. Its errors wrap ErrInvalidRules.
func (rs RuleSet) Validate() error {
	_, _, err := dialect.Compile(rs.shared(), DefaultPrefix, nil)
	return err
}

// form converts a Rule, its Route the Pattern, to a rules.Rule and back.
var form = rules.Form[Rule]{
	To: func(r Rule) rules.Rule {
		return rules.Rule{Name: r.Name, Pattern: r.Route, Tier: r.Tier, Key: r.Key,
			Limits: r.Limits, MaxDelay: r.MaxDelay, Shadow: r.Shadow}
	},
	From: func(r rules.Rule) Rule {
		return Rule{Name: r.Name, Route: r.Pattern, Tier: r.Tier, Key: r.Key,
			Limits: r.Limits, MaxDelay: r.MaxDelay, Shadow: r.Shadow}
	},
}

// shared converts the set to its rules form, and ruleSetOf back.
func (rs RuleSet) shared() rules.RuleSet { return form.Set(rs.Rules, rs.Default) }

func ruleSetOf(rs rules.RuleSet) (out RuleSet) {
	out.Rules, out.Default = form.Split(rs)
	return out
}

// rule is a compiled Rule; ruleSet a compiled RuleSet, routes matched by a
// private ServeMux.
type (
	rule    = rules.CompiledRule
	ruleSet = rules.CompiledSet[*matcher]
)

// dialect is what httplimit's rules are: routes, matched by ServeMux.
var dialect = &rules.Dialect[*matcher]{
	Pkg:        "httplimit",
	ErrInvalid: ErrInvalidRules,
	Pattern:    "route",
	Check:      func(route string) error { return register(http.NewServeMux(), route) },
	Shape:      routeShape,
	Build:      newMatcher,
}

// compile validates rs and builds its matchers (rules.Dialect.Compile).
func compile(rs RuleSet, prefix string, old *ruleSet) (*ruleSet, []string, error) {
	return dialect.Compile(rs.shared(), prefix, old)
}

// match returns the rule deciding r, or nil.
func match(s *ruleSet, r *http.Request, tier string) *rule {
	return s.Match(tier, func(m *matcher) *rule { return m.match(r) })
}

// matcher finds the rule of the most specific route.
type matcher struct {
	mux   *http.ServeMux
	rules map[string]*rule // by pattern, as registered
}

func (m *matcher) match(r *http.Request) *rule {
	if m == nil {
		return nil
	}
	// For a redirect, Handler returns the pattern of the path redirected
	// to; for no match (or another method only), "".
	_, pattern := m.mux.Handler(r)
	return m.rules[pattern]
}

// register adds pattern to mux, turning ServeMux's panic on a malformed
// or conflicting pattern into an error.
func register(mux *http.ServeMux, pattern string) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	mux.Handle(pattern, http.NotFoundHandler()) // the handler is never run
	return nil
}

// newMatcher registers the rules' routes on a private ServeMux.
func newMatcher(d *rules.Dialect[*matcher], rules []*rule) (*matcher, error) {
	m := &matcher{mux: http.NewServeMux(), rules: map[string]*rule{}}
	for i, c := range rules {
		if err := register(m.mux, c.Pattern); err != nil {
			// Name the rule it conflicts with (ServeMux's message names a
			// source line of this package instead).
			for _, o := range rules[:i] {
				pair := http.NewServeMux()
				if register(pair, o.Pattern) == nil && register(pair, c.Pattern) != nil {
					return nil, d.Invalid("route %q of rule %q conflicts with route %q of rule %q: neither is more specific (net/http.ServeMux precedence)",
						c.Pattern, c.Name, o.Pattern, o.Name)
				}
			}
			return nil, d.Invalid("rule %q: route %q: %w", c.Name, c.Pattern, err)
		}
		m.rules[c.Pattern] = c
	}
	return m, nil
}

// routeShape returns a pattern with its wildcard names erased, so that two
// patterns matching the same requests ("/a/{x}", "/a/{y}") compare equal.
func routeShape(p string) string {
	var b strings.Builder
	method, rest := "", p
	if i := strings.IndexAny(p, " \t"); i >= 0 {
		method, rest = p[:i], strings.TrimLeft(p[i:], " \t")
	}
	b.WriteString(method)
	b.WriteByte(' ')
	for rest != "" {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			b.WriteString(rest)
			break
		}
		b.WriteString(rest[:i])
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			b.WriteString(rest[i:])
			break
		}
		switch w := rest[i+1 : i+j]; {
		case w == "$":
			b.WriteString("{$}")
		case strings.HasSuffix(w, "..."):
			b.WriteString("{...}")
		default:
			b.WriteString("{}")
		}
		rest = rest[i+j+1:]
	}
	return b.String()
}
