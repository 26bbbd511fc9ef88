// Command grpcserver is a small gRPC service rate-limited by package
// grpclimit (the standard health service and a tiny echo service), with
// rules from a YAML file it reloads when the file changes and Prometheus
// metrics; and, with -call, a client that calls it through grpclimit's
// client interceptors and prints what each call got.
//
//	go run ./examples/grpcserver -redis 127.0.0.1:6379 -rules examples/grpcserver/rules.yaml
//	go run ./examples/grpcserver -call 127.0.0.1:50051 -n 6
//
// The server listens on 127.0.0.1:50051 by default and refuses an address
// that is not loopback unless -public is given. Two demo API keys stand
// for an authentication layer: "alice-key" (user alice, tier pro) and
// "bob-key" (user bob, tier free).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/hybridlimit/hybridlimit/grpclimit"
	"github.com/hybridlimit/hybridlimit/hybrid"
	"github.com/hybridlimit/hybridlimit/promlimit"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "grpcserver:", err)
		os.Exit(1)
	}
}

// options are the flags of both modes.
type options struct {
	listen, metrics, redis, rules, trusted string
	public                                 bool
	timeout                                time.Duration

	call, method, apiKey, xff, clientRules string
	n                                      int
	failFast                               bool
	deadline                               time.Duration
}

// run parses the flags and serves until ctx ends, then stops gracefully;
// with -call it makes the calls instead. The server writes "listening on
// ADDR" to stdout once it accepts calls.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o options
	fs := flag.NewFlagSet("grpcserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.listen, "listen", "127.0.0.1:50051", "`address` to serve gRPC on; loopback only unless -public")
	fs.StringVar(&o.metrics, "metrics", "", "`address` to serve Prometheus metrics on (/metrics); none if empty")
	fs.BoolVar(&o.public, "public", false, "allow -listen and -metrics addresses that are not loopback")
	fs.StringVar(&o.redis, "redis", "127.0.0.1:6379", "comma-separated Redis `addresses` (host:port), one node each")
	fs.StringVar(&o.rules, "rules", "rules.yaml", "YAML rules `file`, reloaded when it changes")
	fs.StringVar(&o.trusted, "trusted-proxies", "", "comma-separated `CIDRs` of proxies whose x-forwarded-for is believed")
	fs.DurationVar(&o.timeout, "timeout", 0, "bound on each Redis call (hybrid.Config.Timeout); 0 means the library's default, 50ms")
	fs.StringVar(&o.call, "call", "", "client mode: call the server at `address` instead of serving")
	fs.StringVar(&o.method, "method", "check", "client mode: what to call: check, watch, say or chat")
	fs.IntVar(&o.n, "n", 1, "client mode: number of calls (chat: messages on one stream)")
	fs.StringVar(&o.apiKey, "api-key", "", "client mode: x-api-key metadata to send")
	fs.StringVar(&o.xff, "xff", "", "client mode: x-forwarded-for metadata to send")
	fs.StringVar(&o.clientRules, "client-rules", "", "client mode: YAML rules `file` limiting the outgoing calls (needs -redis)")
	fs.BoolVar(&o.failFast, "fail-fast", false, "client mode: refuse calls over the client rules at once instead of waiting")
	fs.DurationVar(&o.deadline, "deadline", 5*time.Second, "client mode: deadline of each call")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	if o.call != "" {
		return callMode(ctx, o, stdout, logger)
	}
	for _, addr := range []string{o.listen, o.metrics} {
		if err := checkLoopback(addr, o.public); addr != "" && err != nil {
			return err
		}
	}
	return serveMode(ctx, o, stdout, logger)
}

func serveMode(ctx context.Context, o options, stdout io.Writer, logger *slog.Logger) error {
	rules, err := grpclimit.LoadRules(o.rules)
	if err != nil {
		return err
	}
	lim, err := newLimiter(o, logger)
	if err != nil {
		return err
	}
	defer lim.Close()
	ic, err := grpclimit.New(lim, grpclimit.Config{
		Rules:          rules,
		TrustedProxies: splitList(o.trusted),
		User:           demoUser,
		Tier:           demoTier,
		Logger:         logger,
	})
	if err != nil {
		return err
	}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(ic.Unary()), grpc.ChainStreamInterceptor(ic.Stream()))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	srv.RegisterService(&echoDesc, nil)

	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	var metricsSrv *http.Server
	if o.metrics != "" {
		collector, err := promlimit.New(lim, promlimit.Config{GRPC: ic})
		if err != nil {
			return err
		}
		reg := prometheus.NewRegistry()
		reg.MustRegister(collector)
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		mln, err := net.Listen("tcp", o.metrics)
		if err != nil {
			ln.Close()
			return err
		}
		metricsSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		wg.Go(func() {
			if err := metricsSrv.Serve(mln); !errors.Is(err, http.ErrServerClosed) {
				errs <- err
			}
		})
		fmt.Fprintf(stdout, "metrics on http://%s/metrics\n", mln.Addr())
	}
	wg.Go(func() {
		if err := ic.Watch(ctx, o.rules); err != nil {
			logger.Error("watching rules", "err", err)
		}
	})
	wg.Go(func() { errs <- srv.Serve(ln) })
	fmt.Fprintf(stdout, "listening on %s\n", ln.Addr())

	select {
	case <-ctx.Done():
		err = nil
	case err = <-errs:
	}
	cancel()
	stopped := make(chan struct{})
	go func() {
		srv.GracefulStop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		srv.Stop() // streams still open: end them
	}
	if metricsSrv != nil {
		metricsSrv.Close()
	}
	wg.Wait()
	return err
}

// callMode makes o.n calls of o.method to the server at o.call and prints
// what each got: its status, the rate-limit metadata, and for a refusal
// the RetryInfo and QuotaFailure details and the pushback trailer.
func callMode(ctx context.Context, o options, stdout io.Writer, logger *slog.Logger) error {
	dial := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	var out *grpclimit.Interceptor
	if o.clientRules != "" {
		rules, err := grpclimit.LoadRules(o.clientRules)
		if err != nil {
			return err
		}
		lim, err := newLimiter(o, logger)
		if err != nil {
			return err
		}
		defer lim.Close()
		out, err = grpclimit.New(lim, grpclimit.Config{Rules: rules, FailFast: o.failFast, Prefix: "grpc-out:", Logger: logger})
		if err != nil {
			return err
		}
		dial = append(dial, grpc.WithUnaryInterceptor(out.UnaryClient()), grpc.WithStreamInterceptor(out.StreamClient()))
	}
	conn, err := grpc.NewClient(o.call, dial...)
	if err != nil {
		return err
	}
	defer conn.Close()
	var kv []string
	if o.apiKey != "" {
		kv = append(kv, "x-api-key", o.apiKey)
	}
	if o.xff != "" {
		kv = append(kv, "x-forwarded-for", o.xff)
	}
	ctx = metadata.AppendToOutgoingContext(ctx, kv...)
	switch o.method {
	case "check", "watch", "say":
		for i := range o.n {
			start := time.Now()
			md, trailer, err := callOnce(ctx, conn, o.method, o.deadline)
			report(stdout, fmt.Sprintf("call %d", i+1), md, trailer, err, time.Since(start))
		}
	case "chat":
		if err := chat(ctx, conn, o, stdout); err != nil {
			return err
		}
	default:
		return fmt.Errorf("-method %q: want check, watch, say or chat", o.method)
	}
	if out != nil {
		for _, r := range out.Stats().Rules {
			fmt.Fprintf(stdout, "client rule %s: %d allowed, %d after a wait, %d refused before sending\n", r.Name, r.Allowed, r.Delayed, r.Denied)
		}
	}
	return nil
}

// newLimiter returns a Limiter over the nodes of -redis.
func newLimiter(o options, logger *slog.Logger) (*hybrid.Limiter, error) {
	return hybrid.New(hybrid.Config{Addrs: splitList(o.redis), Timeout: o.timeout, Logger: logger})
}

// callOnce makes one call and returns its header and trailer metadata.
func callOnce(ctx context.Context, conn *grpc.ClientConn, method string, deadline time.Duration) (header, trailer metadata.MD, err error) {
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	client := healthpb.NewHealthClient(conn)
	switch method {
	case "check":
		_, err = client.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Header(&header), grpc.Trailer(&trailer))
		return header, trailer, err
	case "watch":
		stream, err := client.Watch(ctx, &healthpb.HealthCheckRequest{})
		if err != nil {
			return nil, nil, err
		}
		_, err = stream.Recv() // the first status, or the refusal
		header, _ = stream.Header()
		if err != nil {
			trailer = stream.Trailer()
		}
		return header, trailer, err
	default:
		err = conn.Invoke(ctx, sayMethod, wrapperspb.String("hi"), new(wrapperspb.StringValue), grpc.Header(&header), grpc.Trailer(&trailer))
		return header, trailer, err
	}
}

// chat sends o.n messages on one Chat stream, each after the echo of the
// last.
func chat(ctx context.Context, conn *grpc.ClientConn, o options, stdout io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, o.deadline)
	defer cancel()
	start := time.Now()
	stream, err := conn.NewStream(ctx, &echoDesc.Streams[0], chatMethod)
	if err != nil {
		report(stdout, "stream", nil, nil, err, time.Since(start))
		return nil
	}
	for i := range o.n {
		if i > 0 {
			start = time.Now()
		}
		err := stream.SendMsg(wrapperspb.String(fmt.Sprint("message ", i+1)))
		if err == nil {
			err = stream.RecvMsg(new(wrapperspb.StringValue))
		}
		var md, trailer metadata.MD
		if i == 0 {
			md, _ = stream.Header() // the stream's, sent with the first echo
		}
		if err != nil {
			trailer = stream.Trailer()
		}
		report(stdout, fmt.Sprintf("message %d", i+1), md, trailer, err, time.Since(start))
		if err != nil {
			return nil
		}
	}
	return stream.CloseSend()
}

// report prints one call's outcome: its status and ratelimit header
// metadata; for an error its message, details and pushback trailer.
func report(w io.Writer, what string, md, trailer metadata.MD, err error, took time.Duration) {
	st := status.Convert(err)
	line := fmt.Sprintf("%s: %v", what, st.Code())
	if v := md.Get(grpclimit.RateLimitMetadata); len(v) > 0 {
		line += " ratelimit=" + v[0]
	}
	if took >= 100*time.Millisecond {
		line += fmt.Sprintf(" (after %v)", took.Round(100*time.Millisecond))
	}
	fmt.Fprintln(w, line)
	if err == nil {
		return
	}
	fmt.Fprintf(w, "  message: %s\n", st.Message())
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.RetryInfo:
			fmt.Fprintf(w, "  google.rpc.RetryInfo: retry_delay %v\n", d.GetRetryDelay().AsDuration())
		case *errdetails.QuotaFailure:
			for _, v := range d.GetViolations() {
				fmt.Fprintf(w, "  google.rpc.QuotaFailure: subject %q quota_id %q quota_value %d\n", v.GetSubject(), v.GetQuotaId(), v.GetQuotaValue())
			}
		}
	}
	if v := trailer.Get(grpclimit.PushbackTrailer); len(v) > 0 {
		fmt.Fprintf(w, "  trailer %s: %s\n", grpclimit.PushbackTrailer, strings.Join(v, ", "))
	}
}

// checkLoopback refuses an address reachable from other machines unless
// public is set.
func checkLoopback(addr string, public bool) error {
	if public {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("address %q is not a loopback address; pass -public to serve other machines", addr)
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// demoUsers stands for a real authentication layer: API key to user and
// tier.
var demoUsers = map[string]struct{ user, tier string }{
	"alice-key": {"alice", "pro"},
	"bob-key":   {"bob", "free"},
}

func apiKey(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get("x-api-key"); len(v) > 0 {
		return v[0]
	}
	return ""
}

func demoUser(ctx context.Context) (string, bool) {
	u, ok := demoUsers[apiKey(ctx)]
	return u.user, ok
}

func demoTier(ctx context.Context) string { return demoUsers[apiKey(ctx)].tier }

// The echo service, registered by hand (no generated code): Say answers
// its request, Chat echoes each message until the client closes.
const (
	sayMethod  = "/demo.Echo/Say"
	chatMethod = "/demo.Echo/Chat"
)

var echoDesc = grpc.ServiceDesc{
	ServiceName: "demo.Echo",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{MethodName: "Say", Handler: func(srv any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
		in := new(wrapperspb.StringValue)
		if err := dec(in); err != nil {
			return nil, err
		}
		h := func(ctx context.Context, req any) (any, error) { return req, nil }
		if ic == nil {
			return h(ctx, in)
		}
		return ic(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: sayMethod}, h)
	}}},
	Streams: []grpc.StreamDesc{{StreamName: "Chat", ServerStreams: true, ClientStreams: true, Handler: func(_ any, ss grpc.ServerStream) error {
		for {
			m := new(wrapperspb.StringValue)
			if err := ss.RecvMsg(m); errors.Is(err, io.EOF) {
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
