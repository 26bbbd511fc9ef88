package httplimit

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hybridlimit/hybridlimit/hybrid"
	"github.com/hybridlimit/hybridlimit/internal/limitspec"
)

// DefaultMaxDelay is the longest a LeakyBucket rule holds a request when
// its MaxDelay is 0.
const DefaultMaxDelay = time.Second

// DefaultRuleName names RuleSet.Default when it has no name.
const DefaultRuleName = "default"

// maxNameLen bounds a rule name, which is part of every key.
const maxNameLen = 64

// KeySource is a set of the identities a rule keys requests by. The
// request is keyed by the first one it carries, in the fixed order API key,
// user, client IP; a request that carries none of them is keyed by its
// client IP, so that no request escapes a rule by omitting its identity.
type KeySource uint8

const (
	// KeyAPIKey keys by the API key header (Config.APIKeyHeader), hashed.
	KeyAPIKey KeySource = 1 << iota
	// KeyUser keys by the user Config.User returns.
	KeyUser
	// KeyIP keys by the client IP (see Config.TrustedProxies), or its
	// IPv6 prefix (Config.IPv6Prefix).
	KeyIP

	// keyAll is the zero value's meaning.
	keyAll = KeyAPIKey | KeyUser | KeyIP
)

var keyNames = [...]struct {
	k    KeySource
	name string
}{{KeyAPIKey, "api-key"}, {KeyUser, "user"}, {KeyIP, "ip"}}

// String returns the sources in priority order, as in a rules file:
// "api-key|user|ip" (also for the zero value, which means them all).
func (k KeySource) String() string {
	if k == 0 {
		k = keyAll
	}
	var parts []string
	for _, n := range keyNames {
		if k&n.k != 0 {
			parts = append(parts, n.name)
		}
	}
	if rest := k &^ keyAll; rest != 0 {
		parts = append(parts, fmt.Sprintf("KeySource(%#x)", uint8(rest)))
	}
	return strings.Join(parts, "|")
}

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
	_, _, err := compile(rs, DefaultPrefix, nil)
	return err
}

// normalized returns the rule with its defaults filled and Limits copied.
func (r Rule) normalized() Rule {
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

func (r Rule) equal(o Rule) bool {
	return r.Name == o.Name && r.Route == o.Route && r.Tier == o.Tier && r.Key == o.Key &&
		r.MaxDelay == o.MaxDelay && r.Shadow == o.Shadow && slices.Equal(r.Limits, o.Limits)
}

// normalized returns the set with every rule normalized.
func (rs RuleSet) normalized() RuleSet {
	out := RuleSet{Rules: make([]Rule, len(rs.Rules))}
	for i, r := range rs.Rules {
		out.Rules[i] = r.normalized()
	}
	if rs.Default != nil {
		d := *rs.Default
		if d.Name == "" {
			d.Name = DefaultRuleName
		}
		d = d.normalized()
		out.Default = &d
	}
	return out
}

func (rs RuleSet) equal(o RuleSet) bool {
	if (rs.Default == nil) != (o.Default == nil) || (rs.Default != nil && !rs.Default.equal(*o.Default)) {
		return false
	}
	return slices.EqualFunc(rs.Rules, o.Rules, Rule.equal)
}

// rule is a compiled Rule.
type rule struct {
	Rule
	keyPrefix string   // Config.Prefix + Name + ":"
	policy    string   // RateLimit-Policy field value
	names     []string // policy name of each limit
	stats     *ruleStats
}

// ruleStats counts one rule's outcomes; it is carried over reloads by
// name.
type ruleStats struct {
	allowed, delayed, denied, shadowDenied, errors atomic.Int64
	lastLog                                        atomic.Int64 // UnixNano of the last sampled log line
	quiet                                          atomic.Int64 // lines suppressed since
}

// logEvery samples log lines: at most one per rule per this interval.
const logEvery = time.Second

// sample reports whether a log line may be written now, and how many were
// suppressed since the last one.
func (s *ruleStats) sample(now time.Time) (ok bool, suppressed int64) {
	last := s.lastLog.Load()
	if n := now.UnixNano(); n-last >= int64(logEvery) && s.lastLog.CompareAndSwap(last, n) {
		return true, s.quiet.Swap(0)
	}
	s.quiet.Add(1)
	return false, 0
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

// tierRules are the rules a request of one tier is matched against.
type tierRules struct {
	routes *matcher // the tier's routed rules and the generic ones
	any    *rule    // the tier's rule without Route, or nil
}

// ruleSet is a compiled RuleSet, immutable once built.
type ruleSet struct {
	src     RuleSet // normalized
	generic *matcher
	tiers   map[string]*tierRules
	def     *rule
	all     []*rule // Rules in order, then Default
}

// match returns the rule deciding r, or nil.
func (s *ruleSet) match(r *http.Request, tier string) *rule {
	if t := s.tiers[tier]; tier != "" && t != nil {
		if rl := t.routes.match(r); rl != nil {
			return rl
		}
		if t.any != nil {
			return t.any
		}
		return s.def
	}
	if rl := s.generic.match(r); rl != nil {
		return rl
	}
	return s.def
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidRules}, args...)...)
}

// compile validates rs and builds its matchers. Rules of old with the same
// name keep their counters. warnings are valid but doubtful settings.
func compile(rs RuleSet, prefix string, old *ruleSet) (_ *ruleSet, warnings []string, _ error) {
	rs = rs.normalized()
	s := &ruleSet{src: rs, tiers: map[string]*tierRules{}}
	prev := map[string]*ruleStats{}
	if old != nil {
		for _, r := range old.all {
			prev[r.Name] = r.stats
		}
	}
	seen := map[string]bool{}
	build := func(r Rule, what string) (*rule, error) {
		if err := checkName(r.Name); err != nil {
			return nil, invalid("%s: %w", what, err)
		}
		if seen[r.Name] {
			return nil, invalid("rule %q given twice", r.Name)
		}
		seen[r.Name] = true
		w, err := checkRule(r)
		if err != nil {
			return nil, invalid("rule %q: %w", r.Name, err)
		}
		warnings = append(warnings, w...)
		c := &rule{Rule: r, keyPrefix: prefix + r.Name + ":", stats: prev[r.Name]}
		if c.stats == nil {
			c.stats = new(ruleStats)
		}
		c.names, c.policy = policy(r)
		s.all = append(s.all, c)
		return c, nil
	}

	var generic, tiered []*rule
	for i, r := range rs.Rules {
		c, err := build(r, fmt.Sprintf("rule %d", i+1))
		if err != nil {
			return nil, nil, err
		}
		switch {
		case r.Route == "" && r.Tier == "":
			return nil, nil, invalid("rule %q has neither route nor tier: make it the default rule", r.Name)
		case r.Route == "":
			t := s.tier(r.Tier)
			if t.any != nil {
				return nil, nil, invalid("rules %q and %q both match every route of tier %q", t.any.Name, r.Name, r.Tier)
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
		if rs.Default.Route != "" || rs.Default.Tier != "" {
			return nil, nil, invalid("default rule %q has a route or a tier", rs.Default.Name)
		}
		c, err := build(*rs.Default, "default rule")
		if err != nil {
			return nil, nil, err
		}
		s.def = c
	}

	var err error
	if s.generic, err = newMatcher(generic); err != nil {
		return nil, nil, err
	}
	for name, t := range s.tiers {
		var own []*rule
		for _, c := range tiered {
			if c.Tier == name {
				own = append(own, c)
			}
		}
		if len(own) == 0 {
			t.routes = s.generic
			continue
		}
		// A tier's rule overrides a generic rule of an equivalent route;
		// any other overlap must be resolvable by ServeMux.
		rules := slices.Clone(own)
		for _, g := range generic {
			if !slices.ContainsFunc(own, func(c *rule) bool { return routeShape(c.Route) == routeShape(g.Route) }) {
				rules = append(rules, g)
			}
		}
		if t.routes, err = newMatcher(rules); err != nil {
			return nil, nil, err
		}
	}
	return s, warnings, nil
}

func (s *ruleSet) tier(name string) *tierRules {
	t := s.tiers[name]
	if t == nil {
		t = &tierRules{}
		s.tiers[name] = t
	}
	return t
}

// checkName reports a name that cannot be part of a key and a header.
func checkName(name string) error {
	if name == "" || len(name) > maxNameLen {
		return fmt.Errorf("name %q: want 1 to %d bytes", name, maxNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("name %q: only letters, digits, '.', '_' and '-' are allowed", name)
		}
	}
	return nil
}

// checkRule validates a normalized rule's key, limits and delay, and warns
// about a LeakyBucket whose queue outlasts MaxDelay.
func checkRule(r Rule) (warnings []string, _ error) {
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
			if d := longestDelay(l); d > r.MaxDelay {
				warnings = append(warnings, fmt.Sprintf(
					"rule %q: %v can hold a request %v, above its max delay %v: requests that would wait longer are denied but take their place in the queue; lower the burst to %d",
					r.Name, l, d, r.MaxDelay, burstFor(l, r.MaxDelay)))
			}
		}
	}
	if r.Route != "" {
		if err := register(http.NewServeMux(), r.Route); err != nil {
			return nil, fmt.Errorf("route %q: %w", r.Route, err)
		}
	}
	return warnings, nil
}

// longestDelay is the Delay of a request of one unit that finds l's queue
// as full as it can be (Burst-1 units): the LeakyBucket's own
// algo.Spec.LongestDelay. It is 0 for an invalid limit.
func longestDelay(l hybrid.Limit) time.Duration {
	sp, err := limitspec.Of(l)
	if err != nil {
		return 0
	}
	return sp.LongestDelay()
}

// burstFor is the largest burst whose longest delay fits in d.
func burstFor(l hybrid.Limit, d time.Duration) int64 {
	// (b-1)*Period/Rate <= d
	return int64(float64(d)/float64(l.Period)*float64(l.Rate)) + 1
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

// newMatcher registers the rules' routes on a private ServeMux; nil for
// none.
func newMatcher(rules []*rule) (*matcher, error) {
	if len(rules) == 0 {
		return nil, nil
	}
	m := &matcher{mux: http.NewServeMux(), rules: map[string]*rule{}}
	for i, c := range rules {
		if err := register(m.mux, c.Route); err != nil {
			// Name the rule it conflicts with (ServeMux's message names a
			// source line of this package instead).
			for _, o := range rules[:i] {
				pair := http.NewServeMux()
				if register(pair, o.Route) == nil && register(pair, c.Route) != nil {
					return nil, invalid("route %q of rule %q conflicts with route %q of rule %q: neither is more specific (net/http.ServeMux precedence)",
						c.Route, c.Name, o.Route, o.Name)
				}
			}
			return nil, invalid("rule %q: route %q: %w", c.Name, c.Route, err)
		}
		m.rules[c.Route] = c
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

// policy returns the policy names of a rule's limits and its
// RateLimit-Policy field: the rule's name for a single limit, the name and
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
		b.WriteString(strconv.FormatInt(max(ceilSeconds(l.Period), 1), 10))
	}
	return names, b.String()
}
