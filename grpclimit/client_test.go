package grpclimit

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/hybridlimit/hybridlimit/hybrid"
)

// clientConn dials srv through ic's client interceptors.
func clientConn(t *testing.T, srv *testServer, ic *Interceptor) *grpc.ClientConn {
	t.Helper()
	return dial(t, srv.addr, grpc.WithUnaryInterceptor(ic.UnaryClient()), grpc.WithStreamInterceptor(ic.StreamClient()))
}

func say(ctx context.Context, conn *grpc.ClientConn, opts ...grpc.CallOption) error {
	return conn.Invoke(ctx, mSay, wrapperspb.String("hi"), new(wrapperspb.StringValue), opts...)
}

// TestClientWaits: an outgoing call over its limit waits for admission
// within its deadline; one whose admission is due past its deadline fails
// at once with ResourceExhausted and is never sent; one cancelled while
// waiting fails with Canceled.
func TestClientWaits(t *testing.T) {
	srv := serve(t, nil)
	out := newInterceptor(t, newLimiter(t), Config{Rules: RuleSet{Rules: []Rule{
		{Name: "api", Method: "/test.Echo/*", Limits: []hybrid.Limit{hybrid.PerSecond(2)}},
	}}})
	conn := clientConn(t, srv, out)
	ctx := ctxT(t)
	for i := range 2 {
		if err := say(ctx, conn); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	// The third is due in about 500 ms.
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	start := time.Now()
	err := say(short, conn)
	cancel()
	if took := time.Since(start); took > 90*time.Millisecond {
		t.Errorf("refusal took %v, want it at once", took)
	}
	// The details say when, to the millisecond: not HTTP's second.
	if ms := retryOf(t, err, nil); ms > 500 || ms < 300 {
		t.Errorf("retry in %dms, want about 500ms", ms)
	}
	if _, qf := details(t, err); qf.GetViolations()[0].GetSubject() != "all" {
		t.Errorf("QuotaFailure = %v, want subject all", qf)
	}
	cancelled, cancel := context.WithCancel(ctx)
	time.AfterFunc(50*time.Millisecond, cancel)
	if err := say(cancelled, conn); status.Code(err) != codes.Canceled {
		t.Errorf("call cancelled while waiting = %v, want Canceled", err)
	}
	start = time.Now()
	if err := say(ctx, conn); err != nil {
		t.Fatalf("call with time to wait: %v", err)
	}
	if took := time.Since(start); took < 100*time.Millisecond {
		t.Errorf("the waiting call took %v, want it held until a unit is due", took)
	}
	if n := srv.echo.said.Load(); n != 3 {
		t.Errorf("server served %d calls, want 3: refused calls are never sent", n)
	}
	if st := out.Stats().Rules[0]; st.Allowed != 2 || st.Delayed != 1 || st.Denied != 2 {
		t.Errorf("Stats = %+v, want 2 allowed, 1 delayed, 2 denied", st)
	}
}

// TestClientFailFast: with FailFast a call over its limit is refused at
// once, whatever its deadline, with the details a server sends; budgets
// are per API key of the outgoing metadata, else one per rule shared by
// every instance (two Limiters here, as two processes would have).
func TestClientFailFast(t *testing.T) {
	srv := serve(t, nil)
	lim := newLimiter(t)
	rules := RuleSet{Rules: []Rule{{Name: "api", Method: mSay, Limits: []hybrid.Limit{hybrid.PerHour(2)}}}}
	a := clientConn(t, srv, newInterceptor(t, lim, Config{FailFast: true, Rules: rules}))
	lim2, err := hybrid.New(hybrid.Config{Addrs: []string{lim.Stats().Nodes[0].Name}, Timeout: 2 * time.Second, Lease: hybrid.LeaseConfig{Disable: true}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer lim2.Close()
	b := clientConn(t, srv, newInterceptor(t, lim2, Config{FailFast: true, Rules: rules}))
	ctx := ctxT(t)
	withKey := func(k string) context.Context { return metadata.AppendToOutgoingContext(ctx, "x-api-key", k) }
	tests := []struct {
		name string
		conn *grpc.ClientConn
		ctx  context.Context
		want codes.Code
	}{
		{"a", a, ctx, codes.OK},
		{"b shares the budget", b, ctx, codes.OK},
		{"a, spent", a, ctx, codes.ResourceExhausted},
		{"b, spent", b, ctx, codes.ResourceExhausted},
		{"api key k1", a, withKey("k1"), codes.OK},
		{"api key k1 on b", b, withKey("k1"), codes.OK},
		{"api key k1, spent", a, withKey("k1"), codes.ResourceExhausted},
	}
	for _, tt := range tests {
		err := say(tt.ctx, tt.conn)
		if status.Code(err) != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
		if tt.want == codes.ResourceExhausted {
			// 2 an hour: the next in 1800 s, less the time since the first.
			if ms := retryOf(t, err, nil); ms > 1800_000 || ms < 1790_000 {
				t.Errorf("%s: retry in %dms, want just under 1800s", tt.name, ms)
			}
		}
	}
	if n := srv.echo.said.Load(); n != 4 {
		t.Errorf("server served %d calls, want 4", n)
	}
}

// TestClientStreamPerMessage: a client stream under a PerMessage rule is
// charged when it opens and before each message it sends; a refused
// message is not sent, and the stream stays open.
func TestClientStreamPerMessage(t *testing.T) {
	srv := serve(t, nil)
	out := newInterceptor(t, newLimiter(t), Config{FailFast: true, Rules: RuleSet{Rules: []Rule{
		{Name: "chat", Method: mChat, PerMessage: true, Limits: []hybrid.Limit{hybrid.PerHour(3)}},
	}}})
	conn := clientConn(t, srv, out)
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	stream, err := conn.NewStream(ctx, &echoDesc.Streams[0], mChat)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := stream.SendMsg(wrapperspb.String("m")); err != nil {
			t.Fatalf("SendMsg %d: %v", i+1, err)
		}
		if err := stream.RecvMsg(new(wrapperspb.StringValue)); err != nil {
			t.Fatalf("RecvMsg %d: %v", i+1, err)
		}
	}
	details(t, stream.SendMsg(wrapperspb.String("m")))
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if err := stream.RecvMsg(new(wrapperspb.StringValue)); err != io.EOF {
		t.Errorf("RecvMsg after CloseSend = %v, want io.EOF: the refused message was not sent", err)
	}
	if _, err := conn.NewStream(ctx, &echoDesc.Streams[0], mChat); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("NewStream over the limit = %v, want ResourceExhausted", err)
	}
}

// TestClientLeakyBucketShapes: waiting client calls under a LeakyBucket
// leave at its rate.
func TestClientLeakyBucketShapes(t *testing.T) {
	srv := serve(t, nil)
	out := newInterceptor(t, newLimiter(t), Config{Rules: RuleSet{Rules: []Rule{
		{Name: "shaped", Method: mSay, Limits: []hybrid.Limit{{Algorithm: hybrid.LeakyBucket, Rate: 20, Period: time.Second, Burst: 5}}},
	}}})
	conn := clientConn(t, srv, out)
	ctx := ctxT(t)
	var wg sync.WaitGroup
	start := time.Now()
	for range 5 {
		wg.Go(func() {
			if err := say(ctx, conn); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	// Five calls at 20/s: the last leaves 200 ms after the first.
	if took := time.Since(start); took < 190*time.Millisecond {
		t.Errorf("5 calls at 20/s took %v, want at least 200ms", took)
	}
	if st := out.Stats().Rules[0]; st.Allowed+st.Delayed != 5 || st.Delayed < 4 {
		t.Errorf("Stats = %+v, want 5 passed, at least 4 after a delay", st)
	}
}
