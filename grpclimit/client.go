package grpclimit

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/hybridlimit/hybridlimit/rules"
)

// UnaryClient returns a client interceptor that limits outgoing unary
// calls by the rule of their method: a budget shared by every instance
// that calls, through Redis (a third-party API's quota, say). A call is
// keyed by the API key of its outgoing metadata or its user (Config.User),
// else by its rule alone.
//
// By default a call over its limit waits for admission (hybrid's Wait)
// within its deadline; one that cannot be admitted before its deadline
// fails at once with ResourceExhausted and the details a server sends
// (RetryInfo, QuotaFailure), and one whose context ends while waiting
// fails with the context's status. With Config.FailFast, or under a
// shadow rule, a call is decided at once as Unary decides one: refused
// with ResourceExhausted, or held for a LeakyBucket's Delay up to the
// rule's MaxDelay. A refused call is never sent.
func (i *Interceptor) UnaryClient() grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if rl := match(i.eng.Rules(), method, i.tier(ctx)); rl != nil {
			if err := i.outgoing(ctx, method, rl, i.clientKey(ctx, rl)); err != nil {
				return err
			}
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
}

// StreamClient returns a client interceptor that limits outgoing streams
// as UnaryClient limits calls, when they open; under a PerMessage rule,
// each message is admitted before SendMsg sends it, and a refused message
// fails SendMsg without being sent (the stream stays open).
func (i *Interceptor) StreamClient() grpc.StreamClientInterceptor {
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		rl := match(i.eng.Rules(), method, i.tier(ctx))
		if rl == nil {
			return streamer(ctx, desc, cc, method, opts...)
		}
		key := i.clientKey(ctx, rl)
		if err := i.outgoing(ctx, method, rl, key); err != nil {
			return nil, err
		}
		cs, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil || !rl.PerMessage {
			return cs, err
		}
		return &clientStream{ClientStream: cs, i: i, rl: rl, key: key, method: method}, nil
	}
}

// clientStream admits each message before sending it.
type clientStream struct {
	grpc.ClientStream
	i      *Interceptor
	rl     *rule
	key    string
	method string
}

func (s *clientStream) SendMsg(m any) error {
	if err := s.i.outgoing(s.Context(), s.method, s.rl, s.key); err != nil {
		return err
	}
	return s.ClientStream.SendMsg(m)
}

// outgoing admits one unit of an outgoing call under rl: at once with
// Config.FailFast or a shadow rule, else by waiting within ctx's deadline.
func (i *Interceptor) outgoing(ctx context.Context, method string, rl *rule, key string) error {
	if i.cfg.FailFast || rl.Shadow {
		_, _, err := i.admit(ctx, method, rl, key) // nothing was sent: no metadata to set
		return err
	}
	return i.wait(ctx, rl, key)
}

// wait admits one unit under rl, waiting for it as long as ctx allows. A
// first decision says how long the wait is (a denial's RetryAfter, or a
// LeakyBucket's Delay); one that ends past ctx's deadline is refused at
// once, and a denial that fits is waited out with Limiter.Wait.
func (i *Interceptor) wait(ctx context.Context, rl *rule, key string) error {
	lim := i.eng.Limiter()
	res, err := lim.AllowN(ctx, key, 1, rl.Limits...)
	if err != nil {
		i.eng.Failed(rl, err)
		return nil
	}
	if res.Allowed && res.Delay <= 0 {
		rl.Stats.Allowed.Add(1)
		return nil
	}
	need := res.RetryAfter
	if res.Allowed {
		need = res.Delay
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < need {
		rl.Stats.Denied.Add(1)
		if res.Allowed {
			i.eng.Refund(ctx, key, rl) // it will not be sent
		}
		return denial(rl, key, res, rules.Decision{Retry: need})
	}
	if res.Allowed {
		if !i.eng.Hold(ctx, key, rl, res.Delay) {
			rl.Stats.Denied.Add(1)
			return status.FromContextError(ctx.Err()).Err()
		}
		rl.Stats.Delayed.Add(1)
		return nil
	}
	switch err := lim.Wait(ctx, key, rl.Limits...); {
	case err == nil:
		rl.Stats.Delayed.Add(1)
		return nil
	case ctx.Err() != nil:
		rl.Stats.Denied.Add(1)
		return status.FromContextError(ctx.Err()).Err()
	case errors.Is(err, context.DeadlineExceeded):
		// Others took the units meanwhile, and the next are due past the
		// deadline: what a first look would have said.
		rl.Stats.Denied.Add(1)
		res, _ := lim.Peek(context.WithoutCancel(ctx), key, rl.Limits...)
		return denial(rl, key, res, rules.Decision{Retry: res.RetryAfter})
	default:
		i.eng.Failed(rl, err)
		return nil
	}
}
