package grpclimit

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/hybridlimit/hybridlimit/hybrid"
	"github.com/hybridlimit/hybridlimit/rules"
)

// Interceptor limits the gRPC calls it intercepts with the rules in force:
// Unary and Stream on a server, UnaryClient and StreamClient on a client.
// It is safe for concurrent use; the rules can be replaced while calls are
// served (SetRules, Watch), each call seeing one rule set.
//
// A server and a client usually want rules of their own (the methods a
// service serves, the third-party methods it calls): give each its own
// Interceptor, with its own Prefix if their rule names may meet.
type Interceptor struct {
	cfg  Config
	keys rules.Keys
	eng  *rules.Engine[*methods]
	now  func() time.Time
}

// New returns an Interceptor deciding with lim under cfg. It validates cfg,
// its rules included; errors wrap ErrInvalidConfig or ErrInvalidRules. The
// Interceptor does not close lim.
func New(lim *hybrid.Limiter, cfg Config) (*Interceptor, error) {
	if lim == nil {
		return nil, fmt.Errorf("%w: nil Limiter", ErrInvalidConfig)
	}
	cfg, keys, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	i := &Interceptor{cfg: cfg, keys: keys, now: time.Now}
	i.eng, err = rules.NewEngine(dialect, lim, cfg.Rules.shared(), cfg.Prefix, cfg.Logger, func() time.Time { return i.now() })
	if err != nil {
		return nil, err
	}
	i.cfg.Rules = RuleSet{} // the compiled copy is the one in force
	return i, nil
}

// Rules returns a copy of the rules in force, with their defaults filled.
func (i *Interceptor) Rules() RuleSet { return ruleSetOf(i.eng.Rules().Src.Normalized()) }

// SetRules validates rs and puts it in force atomically: calls already
// decided keep their rule, later ones see the new set. Rules that keep
// their name keep their keys, so their budgets in Redis, and their
// counters. An invalid set is refused with an error wrapping
// ErrInvalidRules, and the rules in force stay. A set equal to the one in
// force changes nothing.
func (i *Interceptor) SetRules(rs RuleSet) error {
	_, err := i.eng.Swap(rs.shared())
	return err
}

// Watch puts the rules file at path in force (see ParseRules), then again
// each time it changes, until ctx ends; it returns nil then, having stopped
// every goroutine it started. It returns an error only when the directory
// cannot be watched. It behaves as httplimit's Middleware.Watch: the
// directory is watched (rename-saves and ConfigMap symlink swaps are
// seen), a file that does not parse or validate is logged and counted
// (Stats.ReloadErrors) and the rules in force stay, as they do while the
// file is missing.
//
// Watch blocks; run it in a goroutine:
//
//	go func() {
//		if err := ic.Watch(ctx, "rules.yaml"); err != nil {
//			log.Print(err)
//		}
//	}()
func (i *Interceptor) Watch(ctx context.Context, path string) error {
	return i.eng.Watch(ctx, path, parse)
}

// Stats is a snapshot of the counters, and RuleStats one rule's: the
// types grpclimit and httplimit share (package rules).
type (
	Stats     = rules.Stats
	RuleStats = rules.RuleStats
)

// Stats returns a snapshot of the counters.
func (i *Interceptor) Stats() Stats { return i.eng.Stats() }

// tier returns the tier of a call.
func (i *Interceptor) tier(ctx context.Context) string {
	if i.cfg.Tier == nil {
		return ""
	}
	return i.cfg.Tier(ctx)
}

// user returns the user source of a call, nil for none.
func (i *Interceptor) user(ctx context.Context) func() (string, bool) {
	if i.cfg.User == nil {
		return nil
	}
	return func() (string, bool) { return i.cfg.User(ctx) }
}

// serverKey returns the Limiter key of an incoming call under rl:
//
//	<prefix><rule>:key:<hash>    API key metadata, SHA-256 truncated to 128 bits
//	<prefix><rule>:user:<id>     user id (userh:<hash> when long or unusual)
//	<prefix><rule>:ip:<addr>     client IP, or its prefix ("2001:db8::/64")
//
// the client IP being the peer's address, or, from a trusted proxy, the
// first untrusted address of the forwarding metadata walked right to left.
func (i *Interceptor) serverKey(ctx context.Context, rl *rule) string {
	md, _ := metadata.FromIncomingContext(ctx)
	req := rules.Request{APIKey: first(md, i.cfg.APIKeyMetadata), Forwarded: md[i.cfg.ForwardedMetadata]}
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		req.Peer = p.Addr.String()
	}
	return i.keys.Key(rl.KeyPrefix, rl.Key, &req, i.user(ctx))
}

// clientKey returns the Limiter key of an outgoing call under rl: by the
// API key of its outgoing metadata, or its user, else the rule's one
// budget, "<prefix><rule>:all", shared by every instance.
func (i *Interceptor) clientKey(ctx context.Context, rl *rule) string {
	md, _ := metadata.FromOutgoingContext(ctx)
	req := rules.Request{APIKey: first(md, i.cfg.APIKeyMetadata), Outgoing: true}
	return i.keys.Key(rl.KeyPrefix, rl.Key, &req, i.user(ctx))
}

// first returns the first value of a metadata key (lower case), "" for
// none.
func first(md metadata.MD, key string) string {
	if v := md[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}
