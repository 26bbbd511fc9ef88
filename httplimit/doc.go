// Package httplimit is net/http middleware that rate-limits requests with a
// hybrid.Limiter, by rules per route and per tier. Its middleware is a
// plain func(http.Handler) http.Handler (it needs no router), so it fits
// ServeMux, chi (r.Use(mw.Wrap)), and any framework that adapts an
// http.Handler middleware; the rules file is YAML (goccy/go-yaml) and is
// watched with fsnotify.
//
//	rules, err := httplimit.LoadRules("rules.yaml")
//	mw, err := httplimit.New(lim, httplimit.Config{
//		Rules:          rules,
//		TrustedProxies: []string{"10.0.0.0/8"},
//		User:           userFromSession, // func(*http.Request) (string, bool)
//	})
//	go mw.Watch(ctx, "rules.yaml") // reload on change
//	http.ListenAndServe(addr, mw.Wrap(mux))
//
// # Rules
//
// A Rule has a name, an optional route (a Go 1.22 ServeMux pattern: method,
// host, path with wildcards), an optional tier, the identities that key it,
// and one or more limits, decided together in one hybrid AllowN call: all
// pass or none is charged. Each request is decided by one rule: the one of
// the most specific route among the rules of its tier and of every tier
// (matched by a private http.ServeMux, so precedence is ServeMux's), else
// its tier's catch-all rule, else the default rule, else none (see
// RuleSet). A shadow rule is a dry run: decided, counted and logged, never
// blocking.
//
// Rules come from Go values or from YAML (ParseRules, LoadRules). Watch
// reloads a file when it changes, validates it and swaps it in atomically;
// a bad file is logged and the old rules stay. Every key sent to the
// Limiter starts with the rule's name, so two rules never share a budget,
// and a rule keeps its budgets across reloads while it keeps its name.
//
// # Keys and client addresses
//
// A rule keys a request by its API key (hashed), by its user
// (Config.User), or by its client IP, whichever it carries first in that
// order, the client IP being every rule's last resort. The client IP is
// RemoteAddr unless the peer is a trusted proxy (Config.TrustedProxies);
// then the forwarding header (X-Forwarded-For, or RFC 7239 Forwarded) is
// walked right to left past the trusted hops, and the first untrusted
// address is the client. Entries a client wrote itself are therefore never
// read, and a malformed, hidden ("unknown", "_obf") or excessive entry
// stops the walk at the last hop a trusted proxy vouched for. Addresses
// are unmapped (::ffff:192.0.2.1 is 192.0.2.1), lose their zone and port,
// and IPv6 clients are keyed by their /64 (Config.IPv6Prefix).
//
// # Responses
//
// A request a rule allows passes with the rate-limit header fields of the
// IETF draft (RateLimit-Policy and RateLimit) or the legacy X-RateLimit-*
// fields (Config.Headers); a LeakyBucket rule holds it for its Delay first,
// up to the rule's MaxDelay. A denied request is answered 429 with
// Retry-After in whole seconds and an RFC 9457 problem body. Every value
// comes from the durations the Limiter measured on the Redis clock.
//
// Stats counts outcomes per rule and reloads; package promlimit exports
// them to Prometheus.
package httplimit
