// Package grpclimit is a set of gRPC interceptors that rate-limit calls
// with a hybrid.Limiter, by rules per method, per service and per tier:
// server interceptors for the calls a service serves, client interceptors
// for the calls it makes (one budget for a third-party API shared by all
// its instances). It is package httplimit for gRPC: the same rules and
// rules file (method: where httplimit has route:), the same keys, the
// same reload, the same answers in gRPC's terms.
//
//	rules, err := grpclimit.LoadRules("rules.yaml")
//	ic, err := grpclimit.New(lim, grpclimit.Config{
//		Rules:          rules,
//		TrustedProxies: []string{"10.0.0.0/8"},
//		User:           userFromContext, // func(context.Context) (string, bool)
//	})
//	go ic.Watch(ctx, "rules.yaml") // reload on change
//	srv := grpc.NewServer(
//		grpc.ChainUnaryInterceptor(ic.Unary()),
//		grpc.ChainStreamInterceptor(ic.Stream()),
//	)
//
//	out, err := grpclimit.New(lim, grpclimit.Config{Rules: clientRules, Prefix: "grpc-out:"})
//	conn, err := grpc.NewClient(target,
//		grpc.WithUnaryInterceptor(out.UnaryClient()),
//		grpc.WithStreamInterceptor(out.StreamClient()),
//	)
//
// # Rules
//
// A Rule has a name, an optional method ("/pkg.Service/Method", or
// "/pkg.Service/*" for a whole service), an optional tier, the identities
// that key it, and one or more limits, decided together in one hybrid
// AllowN call: all pass or none is charged. Each call is decided by one
// rule: of its full method, else of its service, among the rules of its
// tier and of every tier; else its tier's catch-all rule, else the default
// rule, else none (see RuleSet). A shadow rule is a dry run. A stream is
// charged when it opens, and under a PerMessage rule for each message as
// well. Rules come from Go values or YAML (ParseRules, LoadRules); Watch
// reloads the file when it changes, keeping the rules in force when the
// new file is bad.
//
// # Keys and client addresses
//
// A server rule keys a call by its API key (the x-api-key metadata,
// hashed), by its user (Config.User), or by its client IP, whichever it
// carries first in that order. The client IP is the peer's address
// (peer.FromContext) unless the peer is a trusted proxy
// (Config.TrustedProxies); then the x-forwarded-for metadata is walked
// right to left past the trusted hops, and the first untrusted address is
// the client, exactly as httplimit walks X-Forwarded-For. IPv6 clients are
// keyed by their /64. A client rule keys an outgoing call by the API key
// of its outgoing metadata, or its user, else by the rule alone: one
// budget for everyone who calls.
//
// # Answers
//
// A denied call fails with codes.ResourceExhausted and a message that
// says when to retry ("retry in 2ms", "retry in 1.5s"); its status carries
// a google.rpc.RetryInfo (the time until the call would pass, rounded up
// to the millisecond, never 0) and a google.rpc.QuotaFailure (the rule,
// the binding limit's policy name and rate, what the call was keyed by),
// which a client reads with status.FromError and Details. The same delay
// goes in the grpc-retry-pushback-ms trailer (PushbackTrailer, gRFC A6) as
// integer milliseconds: a client whose retry policy covers
// RESOURCE_EXHAUSTED waits that long, instead of its backoff, before it
// retries, but only a call that received no header metadata
// (Config.NoHeaders); gRFC A6 does not retry a call once headers arrived.
// Allowed and denied calls carry the ratelimit-policy and ratelimit header
// metadata, with the values of httplimit's RateLimit-Policy and RateLimit
// fields, whose times are whole seconds. A LeakyBucket rule holds a call
// for its Delay, up to the rule's MaxDelay.
//
// Stats counts outcomes per rule and reloads; package promlimit exports
// them to Prometheus.
package grpclimit
