package grpclimit

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/hybridlimit/hybridlimit/hybrid"
	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
	"github.com/hybridlimit/hybridlimit/rules"
)

// quiet is a logger for tests that do not read the log.
var quiet = slog.New(slog.DiscardHandler)

// Methods of the services the tests serve.
const (
	mCheck = "/grpc.health.v1.Health/Check" // unary
	mWatch = "/grpc.health.v1.Health/Watch" // server streaming
	mSay   = "/test.Echo/Say"               // unary
	mChat  = "/test.Echo/Chat"              // bidirectional streaming
)

// newLimiter returns a Limiter over a redis-server of its own, with leases
// off so that every figure comes from Redis, and a generous Timeout so
// that a busy machine does not fall back.
func newLimiter(t testing.TB) *hybrid.Limiter {
	t.Helper()
	srv := redistest.Start(t)
	lim, err := hybrid.New(hybrid.Config{
		Addrs:   []string{srv.Addr()},
		Timeout: 2 * time.Second,
		Lease:   hybrid.LeaseConfig{Disable: true},
		Logger:  quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lim.Close() })
	return lim
}

// newInterceptor returns an Interceptor over lim; cfg.Logger defaults to
// quiet.
func newInterceptor(t testing.TB, lim *hybrid.Limiter, cfg Config) *Interceptor {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	ic, err := New(lim, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ic
}

// echoServer is the hand-registered echo service: Say answers its
// request, Chat echoes every message until the client closes.
type echoServer interface{}

type echo struct{ said atomic.Int64 }

var echoDesc = grpc.ServiceDesc{
	ServiceName: "test.Echo",
	HandlerType: (*echoServer)(nil),
	Methods: []grpc.MethodDesc{{MethodName: "Say", Handler: func(srv any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
		in := new(wrapperspb.StringValue)
		if err := dec(in); err != nil {
			return nil, err
		}
		h := func(ctx context.Context, req any) (any, error) {
			srv.(*echo).said.Add(1)
			return req, nil
		}
		if ic == nil {
			return h(ctx, in)
		}
		return ic(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: mSay}, h)
	}}},
	Streams: []grpc.StreamDesc{{StreamName: "Chat", ServerStreams: true, ClientStreams: true, Handler: func(srv any, ss grpc.ServerStream) error {
		for {
			m := new(wrapperspb.StringValue)
			if err := ss.RecvMsg(m); err == io.EOF {
				return nil
			} else if err != nil {
				return err
			}
			if err := ss.SendMsg(m); err != nil {
				return err
			}
		}
	}}},
}

// testServer is a gRPC server on a loopback TCP port serving health and
// echo.
type testServer struct {
	addr string
	echo *echo
}

// serve starts a server with ic's interceptors (none when ic is nil) and
// stops it when the test ends.
func serve(t testing.TB, ic *Interceptor) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var opts []grpc.ServerOption
	if ic != nil {
		opts = append(opts, grpc.ChainUnaryInterceptor(ic.Unary()), grpc.ChainStreamInterceptor(ic.Stream()))
	}
	srv := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	e := new(echo)
	srv.RegisterService(&echoDesc, e)
	var wg sync.WaitGroup
	wg.Go(func() { srv.Serve(ln) }) //nolint:errcheck // Stop ends it
	t.Cleanup(func() {
		srv.Stop()
		wg.Wait()
	})
	return &testServer{addr: ln.Addr().String(), echo: e}
}

// dial returns a client connection to addr, closed when the test ends.
func dial(t testing.TB, addr string, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// ctxT returns a context ending with the test, bounded by 10 s.
func ctxT(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// logBuffer is a concurrency-safe log sink.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func digestOf(s string) string { return rules.Digest(s) }
