package remote

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hybridlimit/hybridlimit/limit"
)

// ErrMisconfigured wraps the errors IsConfigError reports, as Probe returns
// them.
var ErrMisconfigured = errors.New("remote: node misconfigured")

// IsConfigError reports whether err says the client is set up wrong for
// the node, rather than that the node is down or slow: authentication
// (WRONGPASS, NOAUTH), an ACL that forbids a command or key the scripts
// need (NOPERM, also from inside a script), or a TLS handshake that failed
// verification. Such an error does not go away by waiting.
func IsConfigError(err error) bool {
	if err == nil {
		return false
	}
	var re redis.Error
	if errors.As(err, &re) {
		msg := re.Error()
		for _, p := range []string{"WRONGPASS", "NOAUTH", "NOPERM"} {
			if strings.HasPrefix(msg, p) || strings.Contains(msg, " "+p+" ") || strings.Contains(msg, ": "+p) {
				return true
			}
		}
		// Redis 7 answers a command too long to read before AUTH with
		// "Protocol error: unauthenticated …", and a script that calls a
		// command its user may not run with "The user executing the script
		// can't run this command …".
		for _, s := range []string{"unauthenticated", "no permissions", "can't run this command", "can't access at least one of the keys"} {
			if strings.Contains(msg, s) {
				return true
			}
		}
		return false
	}
	var (
		cv  *tls.CertificateVerificationError
		ua  x509.UnknownAuthorityError
		he  x509.HostnameError
		ci  x509.CertificateInvalidError
		rhe tls.RecordHeaderError
	)
	return errors.As(err, &cv) || errors.As(err, &ua) || errors.As(err, &he) || errors.As(err, &ci) || errors.As(err, &rhe)
}

// probeTag is the hash tag of the keys Probe writes: it holds a raw '{',
// which no user key's tag does (tagOf encodes it), so a probe never touches
// a client's state (its keys are "<prefix>{{probe}:…").
const probeTag = "{probe"

// probeLimits are one limit of each algorithm, generous enough that a probe
// is always allowed; their states expire within a second.
var probeLimits = []limit.Limit{
	{Algorithm: limit.TokenBucket, Rate: 1_000_000, Period: time.Second},
	{Algorithm: limit.LeakyBucket, Rate: 1_000_000, Period: time.Second},
	{Algorithm: limit.FixedWindow, Rate: 1_000_000, Period: time.Second},
	{Algorithm: limit.SlidingWindowLog, Rate: 10_000, Period: time.Second},
	{Algorithm: limit.SlidingWindowCounter, Rate: 1_000_000, Period: time.Second},
	{Rate: 1_000_000, Period: time.Second, Name: "probe"},
}

// Probe sends a PING (Connect), then runs every script entry point once,
// on reserved keys: the one-step token bucket, a decision against one
// limit of each algorithm (and a named one), a lease and its give-back.
// It returns nil when all ran, an error wrapping ErrMisconfigured when the
// node refuses them for a reason IsConfigError reports, and the error
// otherwise (the node is down, slow, or out of memory). Users of a
// least-privilege ACL find out here, at startup, what a script would
// otherwise fail with at its first request.
func (s *Store) Probe(ctx context.Context) (err error) {
	wrap := func(what string, err error) error {
		if IsConfigError(err) {
			return fmt.Errorf("%w: %s: %w", ErrMisconfigured, what, err)
		}
		return fmt.Errorf("remote: probe, %s: %w", what, err)
	}
	// A PING first: a client that has not authenticated is told so
	// (NOAUTH), where a request as long as the scripts has its connection
	// closed by Redis ("unauthenticated bulk length"), which may reach the
	// client as a reset while it still writes: a transport error, and the
	// node would start in the failure mode instead of failing New.
	if err := s.Connect(ctx, 1); err != nil {
		return wrap("PING", err)
	}
	if err := s.Load(ctx); err != nil {
		return wrap("loading the scripts", err)
	}
	// A call of entry e against limits on the reserved keys, after head.
	probe := func(e entry, limits []limit.Limit, head ...any) *call {
		return s.tagCall(e, probeTag, probeTag, limits, head...)
	}
	// The reserved keys share one hash tag: one DEL, on one slot (Reset's
	// command too), even after a step failed, so that none outlives the
	// probe (their TTLs are a second; miniredis's clock never moves).
	defer func() {
		if s.buckets > 0 {
			// The compact layout's fields: where the server's clock
			// says they are (reset.lua).
			if derr := s.runCmd(ctx, probe(entryReset, probeLimits)).Err(); derr != nil && err == nil {
				err = wrap("reset.lua", derr)
			}
			return
		}
		keys := probe(entryPeek, probeLimits).keys
		del := make([]any, 0, 1+len(keys))
		del = append(del, "del")
		for _, k := range keys {
			del = append(del, k)
		}
		cmd := redis.NewIntCmd(ctx, del...)
		if derr := s.process(ctx, KeySlot(keys[0]), cmd); derr != nil && err == nil {
			err = wrap("DEL of the probe's keys", derr)
		}
	}()
	// A decision of one unit (decide.lua's head for set 0) against limits.
	decide := func(limits []limit.Limit) *call {
		c := probe(entryDecide, limits, 1)
		c.args = append(c.args, Request{n: 1}.head(0))
		if s.buckets > 0 {
			c.args = append(c.args, probeTag) // the request's field
		}
		return c
	}
	if err := s.runInts(ctx, decide(probeLimits[:1])).Err(); err != nil {
		return wrap("decide.lua (one token bucket)", err)
	}
	if err := s.runInts(ctx, decide(probeLimits)).Err(); err != nil {
		return wrap("decide.lua", err)
	}
	v, err := s.runInts(ctx, probe(entryLease, probeLimits, 1)).Result()
	if err != nil {
		return wrap("lease.lua", err)
	}
	if len(v) != 7 {
		return fmt.Errorf("%w: %d values from lease, want 7", ErrReply, len(v))
	}
	if err := s.runCmd(ctx, probe(entryGiveBack, probeLimits, v[0], v[6])).Err(); err != nil && !errors.Is(err, redis.Nil) {
		return wrap("giveback.lua", err)
	}
	if err := s.runCmd(ctx, probe(entryGiveBack, probeLimits, 1, -1)).Err(); err != nil && !errors.Is(err, redis.Nil) {
		return wrap("giveback.lua (refund)", err)
	}
	if err := s.runInts(ctx, probe(entryPeek, probeLimits)).Err(); err != nil {
		return wrap("peek.lua", err)
	}
	return nil
}
