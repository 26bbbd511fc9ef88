// Package rules is what httplimit and grpclimit share, so that both
// middlewares behave alike: a rule and its validation, the rules file
// (YAML) and its reload, the choice of the rule that decides a request
// among generic, tiered and default rules, the keying of a client, the
// decision itself (a LeakyBucket held up to its MaxDelay, given back when
// refused), the values of the rate-limit fields and the counters.
//
// An application configures rules through its middleware (httplimit.Rule,
// grpclimit.RuleSet, …) and has no need to import this package, but for
// its vocabulary: KeySource, which both middlewares name as their own, and
// Stats, which promlimit reads from either. It is a module of its own,
// public, because the middlewares are modules of their own: Go lets a
// module import only the exported API of another, and semantic versioning
// governs that API across releases.
//
// What differs between the middlewares is a Dialect: how a pattern (an
// HTTP route, a gRPC method) is checked and matched, and the names in
// messages. Each middleware keeps its public types (Rule, RuleSet) and
// converts them to this package's field by field (Form), so that their
// documentation stays theirs.
//
// # Keying a client
//
// Keys turns what a request carries into the key a rule charges: an API
// key (hashed), a user, or the client's address found behind trusted
// proxies, so that an HTTP request and a gRPC call from one client, under
// rules of one name, are keyed alike. The client address is the peer's
// unless the peer is a trusted proxy; then the forwarding header
// (X-Forwarded-For, or RFC 7239 Forwarded) is walked right to left past
// the trusted hops, and the first untrusted address is the client.
// Addresses are unmapped, lose their zone and port, and are keyed by
// prefix: IPv6 by its /64 by default.
//
// This package imports hybrid and, for the rules file, goccy/go-yaml and
// fsnotify; a service that imports only hybrid has neither in its module
// graph.
package rules
