package grpclimit

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Unary returns a server interceptor that decides each unary call with the
// rule of its method (see RuleSet) before its handler runs:
//
//   - allowed: the handler serves it, with the ratelimit-policy and
//     ratelimit header metadata set (unless Config.NoHeaders);
//   - allowed by a LeakyBucket with a Delay: it is held for the Delay
//     first (up to the rule's MaxDelay, else denied); a call that ends
//     meanwhile fails with its context's status (Canceled,
//     DeadlineExceeded) and its place is given back;
//   - denied: ResourceExhausted, with RetryInfo and QuotaFailure details
//     (see the package doc), the header metadata and the
//     PushbackTrailer trailer;
//   - shadow rule: the handler serves it whatever the decision;
//   - no rule matches, or the Limiter fails (it only does after Close):
//     the handler serves it unlimited.
func (i *Interceptor) Unary() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		rl := match(i.eng.Rules(), info.FullMethod, i.tier(ctx))
		if rl == nil {
			return handler(ctx, req)
		}
		md, trailer, err := i.admit(ctx, info.FullMethod, rl, i.serverKey(ctx, rl))
		if md != nil {
			// Fails only outside a server (no stream in ctx), or when the
			// headers are gone: nothing to send then.
			_ = grpc.SetHeader(ctx, md)
		}
		if trailer != nil {
			_ = grpc.SetTrailer(ctx, trailer) // as SetHeader
		}
		if err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}
}

// Stream returns a server interceptor that decides each stream with the
// rule of its method when it opens, as Unary decides a call; a refused
// stream fails before its handler runs. Under a PerMessage rule each
// message the stream receives is decided too, after it arrives: a refused
// message fails RecvMsg with ResourceExhausted, the first one setting the
// stream's PushbackTrailer (the handler usually returns that error, which
// ends the stream), a LeakyBucket holds it.
// A stream keeps the rule it opened under.
func (i *Interceptor) Stream() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ctx := ss.Context()
		rl := match(i.eng.Rules(), info.FullMethod, i.tier(ctx))
		if rl == nil {
			return handler(srv, ss)
		}
		key := i.serverKey(ctx, rl)
		md, trailer, err := i.admit(ctx, info.FullMethod, rl, key)
		if md != nil {
			_ = ss.SetHeader(md) // as in Unary
		}
		if trailer != nil {
			ss.SetTrailer(trailer)
		}
		if err != nil {
			return err
		}
		if rl.PerMessage {
			ss = &serverStream{ServerStream: ss, i: i, rl: rl, key: key, method: info.FullMethod}
		}
		return handler(srv, ss)
	}
}

// serverStream charges each message it receives.
type serverStream struct {
	grpc.ServerStream
	i      *Interceptor
	rl     *rule
	key    string
	method string
	// pushed is set once a refused message has set the trailer: a handler
	// that goes on receiving must not add a second value, which a client
	// reads as "do not retry" (gRFC A6).
	pushed bool
}

func (s *serverStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	_, trailer, err := s.i.admit(s.Context(), s.method, s.rl, s.key)
	if trailer != nil && !s.pushed {
		s.SetTrailer(trailer)
		s.pushed = true
	}
	return err
}

// admit decides one unit of a call (its start, or one of its messages)
// under rl, as a server does. It returns the rate-limit header metadata
// (nil when none applies), the trailer metadata of a denial (its
// PushbackTrailer; nil otherwise) and the call's error: a denial, or the
// end of ctx while the call was held.
func (i *Interceptor) admit(ctx context.Context, method string, rl *rule, key string) (header, trailer metadata.MD, err error) {
	o := i.eng.Admit(ctx, key, rl, func() []any { return []any{"method", method} })
	if !o.Enforced {
		return nil, nil, nil
	}
	header = i.header(rl, o)
	switch {
	case !o.Decision.Allowed:
		return header, pushback(o.Decision), denial(rl, key, o.Result, o.Decision)
	case o.Gone:
		return header, nil, status.FromContextError(ctx.Err()).Err()
	}
	return header, nil, nil
}
