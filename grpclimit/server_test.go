package grpclimit

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/hybridlimit/hybridlimit/hybrid"
)

func TestNewErrors(t *testing.T) {
	lim := newLimiter(t)
	tests := []struct {
		name string
		lim  *hybrid.Limiter
		cfg  Config
		want error
	}{
		{"nil limiter", nil, Config{}, ErrInvalidConfig},
		{"bad trusted proxy", lim, Config{TrustedProxies: []string{"10.0.0.0/40"}}, ErrInvalidConfig},
		{"trust everyone", lim, Config{TrustedProxies: []string{"::/0"}}, ErrInvalidConfig},
		{"IPv6 prefix too long", lim, Config{IPv6Prefix: 129}, ErrInvalidConfig},
		{"negative IPv4 prefix", lim, Config{IPv4Prefix: -1}, ErrInvalidConfig},
		{"long prefix", lim, Config{Prefix: strings.Repeat("p", 65)}, ErrInvalidConfig},
		{"bad rules", lim, Config{Rules: RuleSet{Default: &Rule{}}}, ErrInvalidRules},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.lim, tt.cfg); !errors.Is(err, tt.want) {
				t.Fatalf("New = %v, want %v", err, tt.want)
			}
		})
	}
}

// details returns the RetryInfo and QuotaFailure of a status error, as a
// client decodes them.
func details(t *testing.T, err error) (*errdetails.RetryInfo, *errdetails.QuotaFailure) {
	t.Helper()
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.ResourceExhausted {
		t.Fatalf("error = %v, want a ResourceExhausted status", err)
	}
	var ri *errdetails.RetryInfo
	var qf *errdetails.QuotaFailure
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.RetryInfo:
			ri = d
		case *errdetails.QuotaFailure:
			qf = d
		default:
			t.Errorf("unexpected detail %T %v", d, d)
		}
	}
	if ri == nil || qf == nil || len(qf.GetViolations()) != 1 {
		t.Fatalf("details = %v, want one RetryInfo and one QuotaFailure with one violation", st.Details())
	}
	return ri, qf
}

// TestUnaryDenialAndMetadata checks what a client sees of a unary rule:
// the header metadata of allowed and denied calls and the status details
// of a denial, on a real server and real Redis.
func TestUnaryDenialAndMetadata(t *testing.T) {
	lim := newLimiter(t)
	ic := newInterceptor(t, lim, Config{Rules: RuleSet{Rules: []Rule{{Name: "check", Method: mCheck, Limits: []hybrid.Limit{hybrid.PerHour(2)}}}}})
	srv := serve(t, ic)
	client := healthpb.NewHealthClient(dial(t, srv.addr))
	ctx := ctxT(t)
	// 2 an hour refill one every 1800 s.
	for i, want := range []string{`"check";r=1;t=1800`, `"check";r=0;t=1800`} {
		var md metadata.MD
		if _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Header(&md)); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
		if got := strings.Join(md.Get(RateLimitMetadata), ","); got != want {
			t.Errorf("call %d: ratelimit = %q, want %q", i+1, got, want)
		}
		if got := strings.Join(md.Get(PolicyMetadata), ","); got != `"check";q=2;w=3600` {
			t.Errorf("call %d: ratelimit-policy = %q", i+1, got)
		}
	}
	var md, trailer metadata.MD
	_, err := client.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Header(&md), grpc.Trailer(&trailer))
	// The next unit in 1800 s less the time since the first call, to the
	// millisecond (the ratelimit field's t is whole seconds).
	if ms := retryOf(t, err, trailer); ms > 1800_000 || ms < 1790_000 {
		t.Errorf("retry in %dms, want just under 1800s", ms)
	}
	_, qf := details(t, err)
	v := qf.GetViolations()[0]
	if v.GetSubject() != "ip:127.0.0.1" || v.GetQuotaId() != "check" || v.GetQuotaValue() != 2 ||
		!strings.HasPrefix(v.GetDescription(), `Too many requests under rule "check"; retry in 179`) {
		t.Errorf("violation = %v", v)
	}
	if got := strings.Join(md.Get(RateLimitMetadata), ","); got != `"check";r=0;t=1800` {
		t.Errorf("denied: ratelimit = %q", got)
	}
	// Another method of the service has no rule: unlimited, no metadata.
	echo := dial(t, srv.addr)
	md = nil
	if err := echo.Invoke(ctx, mSay, wrapperspb.String("hi"), new(wrapperspb.StringValue), grpc.Header(&md)); err != nil || len(md.Get(RateLimitMetadata)) != 0 {
		t.Errorf("unmatched call = %v, metadata %v; want OK without rate-limit metadata", err, md)
	}
	st := ic.Stats()
	if len(st.Rules) != 1 || st.Rules[0].Allowed != 2 || st.Rules[0].Denied != 1 {
		t.Errorf("Stats = %+v, want 2 allowed, 1 denied", st)
	}
}

// TestMethodAndServiceRules: a method's rule and its service's rule keep
// budgets of their own, unary and streaming calls alike.
func TestMethodAndServiceRules(t *testing.T) {
	lim := newLimiter(t)
	ic := newInterceptor(t, lim, Config{NoHeaders: true, Rules: RuleSet{Rules: []Rule{
		{Name: "check", Method: mCheck, Limits: []hybrid.Limit{hybrid.PerHour(2)}},
		{Name: "health", Method: "/grpc.health.v1.Health/*", Limits: []hybrid.Limit{hybrid.PerHour(1)}},
	}}})
	srv := serve(t, ic)
	client := healthpb.NewHealthClient(dial(t, srv.addr))
	ctx := ctxT(t)
	codeOf := func(err error) codes.Code { return status.Code(err) }
	var md metadata.MD
	for i, want := range []codes.Code{codes.OK, codes.OK, codes.ResourceExhausted} {
		if _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Header(&md)); codeOf(err) != want {
			t.Errorf("Check %d = %v, want %v", i+1, err, want)
		}
	}
	if len(md) != 0 {
		t.Errorf("metadata %v with NoHeaders", md)
	}
	// Watch is a server stream under the service's rule: charged when it
	// opens, once.
	for i, want := range []codes.Code{codes.OK, codes.ResourceExhausted} {
		sctx, cancel := context.WithCancel(ctx)
		stream, err := client.Watch(sctx, &healthpb.HealthCheckRequest{})
		if err == nil {
			_, err = stream.Recv() // the first status, or the refusal
		}
		cancel()
		if codeOf(err) != want {
			t.Errorf("Watch %d = %v, want %v", i+1, err, want)
		}
		if want == codes.ResourceExhausted {
			details(t, err)
		}
	}
	st := ic.Stats().Rules
	if st[0].Allowed != 2 || st[0].Denied != 1 || st[1].Allowed != 1 || st[1].Denied != 1 {
		t.Errorf("Stats = %+v", st)
	}
}

// TestStreamPerMessage: a PerMessage rule charges a bidirectional stream
// when it opens and for each message it receives; the refused message
// ends the stream with ResourceExhausted.
func TestStreamPerMessage(t *testing.T) {
	lim := newLimiter(t)
	ic := newInterceptor(t, lim, Config{Rules: RuleSet{Rules: []Rule{
		{Name: "chat", Method: mChat, PerMessage: true, Limits: []hybrid.Limit{hybrid.PerHour(4)}},
	}}})
	srv := serve(t, ic)
	conn := dial(t, srv.addr)
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	stream, err := conn.NewStream(ctx, &echoDesc.Streams[0], mChat)
	if err != nil {
		t.Fatal(err)
	}
	// The opening took 1 of 4: three messages pass, the fourth is refused.
	for i := range 4 {
		if err := stream.SendMsg(wrapperspb.String("m")); err != nil {
			t.Fatalf("SendMsg %d: %v", i+1, err)
		}
		err := stream.RecvMsg(new(wrapperspb.StringValue))
		if i < 3 && err != nil {
			t.Fatalf("message %d: %v, want its echo", i+1, err)
		}
		if i == 3 {
			// 4 an hour: the opening's unit is back in 900 s.
			if ms := retryOf(t, err, stream.Trailer()); ms > 900_000 || ms < 890_000 {
				t.Errorf("retry in %dms, want just under 900s", ms)
			}
			if _, qf := details(t, err); qf.GetViolations()[0].GetQuotaId() != "chat" {
				t.Errorf("QuotaFailure = %v", qf)
			}
		}
	}
	md, err := stream.Header()
	if err != nil || strings.Join(md.Get(RateLimitMetadata), "") != `"chat";r=3;t=900` {
		t.Errorf("stream header = %v, %v; want the opening's ratelimit", md, err)
	}
	if st := ic.Stats().Rules[0]; st.Allowed != 4 || st.Denied != 1 {
		t.Errorf("Stats = %+v, want 4 allowed (opening and 3 messages), 1 denied", st)
	}
	// A new stream is refused when it opens, with the pushback trailer.
	stream, err = conn.NewStream(ctx, &echoDesc.Streams[0], mChat)
	if err != nil {
		t.Fatal(err) // the refusal comes with the first message
	}
	err = stream.RecvMsg(new(wrapperspb.StringValue))
	if ms := retryOf(t, err, stream.Trailer()); ms > 900_000 || ms < 890_000 {
		t.Errorf("refused opening: retry in %dms, want just under 900s", ms)
	}
}

// peerCtx is the context of a call from addr with metadata kv.
func peerCtx(addr string, kv ...string) context.Context {
	ap, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		panic(err)
	}
	ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: ap})
	return metadata.NewIncomingContext(ctx, metadata.Pairs(kv...))
}

// TestServerKey checks the key of incoming calls: the API key metadata
// (hashed), the user, the peer, and x-forwarded-for from trusted proxies
// only, with the spoofing vectors of httplimit.
func TestServerKey(t *testing.T) {
	lim := newLimiter(t)
	user := func(ctx context.Context) (string, bool) {
		md, _ := metadata.FromIncomingContext(ctx)
		u := first(md, "test-user")
		return u, u != ""
	}
	rules := func(k KeySource) RuleSet {
		return RuleSet{Default: &Rule{Name: "r", Key: k, Limits: perMin}}
	}
	const apiHash = "grpc:r:key:2bb80d537b1da3e38bd30361aa855686" // SHA-256("secret")[:16]
	const peerAddr = "198.51.100.1:5000"
	const proxy = "10.0.0.1:443"
	trusted := []string{"10.0.0.0/8", "2001:db8:ffff::/48"}
	tests := []struct {
		name string
		cfg  Config
		ctx  context.Context
		want string
	}{
		{"api key first", Config{Rules: rules(0), User: user}, peerCtx(peerAddr, "x-api-key", "secret", "test-user", "alice"), apiHash},
		{"api key trimmed", Config{Rules: rules(0)}, peerCtx(peerAddr, "x-api-key", "  secret "), apiHash},
		{"custom api key metadata", Config{Rules: rules(0), APIKeyMetadata: "Authorization-Key"}, peerCtx(peerAddr, "authorization-key", "secret"), apiHash},
		{"rejected api key", Config{Rules: rules(0), User: user, VerifyAPIKey: func(k string) bool { return k == "good" }}, peerCtx(peerAddr, "x-api-key", "secret", "test-user", "alice"), "grpc:r:user:alice"},
		{"user", Config{Rules: rules(0), User: user}, peerCtx(peerAddr, "test-user", "alice"), "grpc:r:user:alice"},
		{"unusual user hashed", Config{Rules: rules(0), User: user}, peerCtx(peerAddr, "test-user", "a{b}"), "grpc:r:userh:" + digestOf("a{b}")},
		{"no identity", Config{Rules: rules(0), User: user}, peerCtx(peerAddr), "grpc:r:ip:198.51.100.1"},
		{"ip only ignores api key", Config{Rules: rules(KeyIP), User: user}, peerCtx(peerAddr, "x-api-key", "secret"), "grpc:r:ip:198.51.100.1"},
		{"user only ignores api key", Config{Rules: rules(KeyUser), User: user}, peerCtx(peerAddr, "x-api-key", "secret", "test-user", "alice"), "grpc:r:user:alice"},
		{"no peer", Config{Rules: rules(0)}, metadata.NewIncomingContext(context.Background(), nil), "grpc:r:ip:unknown"},
		{"IPv6 /64", Config{Rules: rules(KeyIP)}, peerCtx("[2001:db8:1:2:3:4:5:6]:80"), "grpc:r:ip:2001:db8:1:2::/64"},
		{"IPv6 /48", Config{Rules: rules(KeyIP), IPv6Prefix: 48}, peerCtx("[2001:db8:1:2:3:4:5:6]:80"), "grpc:r:ip:2001:db8:1::/48"},
		{"IPv4-mapped keyed as IPv4", Config{Rules: rules(KeyIP)}, peerCtx("[::ffff:203.0.113.7]:80"), "grpc:r:ip:203.0.113.7"},
		{"untrusted peer spoofs xff", Config{Rules: rules(KeyIP), TrustedProxies: trusted}, peerCtx(peerAddr, "x-forwarded-for", "1.1.1.1"), "grpc:r:ip:198.51.100.1"},
		{"untrusted peer spoofs a trusted hop", Config{Rules: rules(KeyIP), TrustedProxies: trusted}, peerCtx(peerAddr, "x-forwarded-for", "10.0.0.9"), "grpc:r:ip:198.51.100.1"},
		{"no trusted proxies", Config{Rules: rules(KeyIP)}, peerCtx(proxy, "x-forwarded-for", "203.0.113.7"), "grpc:r:ip:10.0.0.1"},
		{"client behind a trusted proxy", Config{Rules: rules(KeyIP), TrustedProxies: trusted}, peerCtx(proxy, "x-forwarded-for", "203.0.113.7"), "grpc:r:ip:203.0.113.7"},
		{"spoofed leftmost entries", Config{Rules: rules(KeyIP), TrustedProxies: trusted}, peerCtx(proxy, "x-forwarded-for", "1.1.1.1, 10.0.0.9, 203.0.113.7"), "grpc:r:ip:203.0.113.7"},
		{"trusted chain", Config{Rules: rules(KeyIP), TrustedProxies: trusted}, peerCtx(proxy, "x-forwarded-for", "203.0.113.7, 10.0.0.2, 10.0.0.3"), "grpc:r:ip:203.0.113.7"},
		{"several values", Config{Rules: rules(KeyIP), TrustedProxies: trusted}, peerCtx(proxy, "x-forwarded-for", "1.1.1.1", "x-forwarded-for", "203.0.113.7"), "grpc:r:ip:203.0.113.7"},
		{"garbage rightmost", Config{Rules: rules(KeyIP), TrustedProxies: trusted}, peerCtx(proxy, "x-forwarded-for", "203.0.113.7, garbage"), "grpc:r:ip:10.0.0.1"},
		{"hex IPv4", Config{Rules: rules(KeyIP), TrustedProxies: trusted}, peerCtx(proxy, "x-forwarded-for", "0x7f.0.0.1"), "grpc:r:ip:10.0.0.1"},
		{"IPv6 client behind a proxy", Config{Rules: rules(KeyIP), TrustedProxies: trusted}, peerCtx(proxy, "x-forwarded-for", "[2001:db8:1:2::7]:4711, 2001:db8:ffff::1"), "grpc:r:ip:2001:db8:1:2::/64"},
		{"forwarded metadata", Config{Rules: rules(KeyIP), TrustedProxies: trusted, ForwardedMetadata: "Forwarded"}, peerCtx(proxy, "forwarded", `for="[2001:db8:cafe::17]:4711"`, "x-forwarded-for", "1.1.1.1"), "grpc:r:ip:2001:db8:cafe::/64"},
		{"xff ignored when forwarded is read", Config{Rules: rules(KeyIP), TrustedProxies: trusted, ForwardedMetadata: "forwarded"}, peerCtx(proxy, "x-forwarded-for", "1.1.1.1"), "grpc:r:ip:10.0.0.1"},
		{"custom prefix", Config{Rules: rules(KeyIP), Prefix: "app1/"}, peerCtx(peerAddr), "app1/r:ip:198.51.100.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ic := newInterceptor(t, lim, tt.cfg)
			rl := match(ic.eng.Rules(), mCheck, "")
			if got := ic.serverKey(tt.ctx, rl); got != tt.want {
				t.Errorf("key = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestKeysEndToEnd sends calls over TCP: API keys and users from
// metadata, the peer, and x-forwarded-for believed from a trusted proxy
// (the test client, on 127.0.0.1) by one server and ignored by another
// that trusts no proxy; both share one budget through Redis.
func TestKeysEndToEnd(t *testing.T) {
	lim := newLimiter(t)
	rules := RuleSet{Default: &Rule{Limits: []hybrid.Limit{hybrid.PerHour(1)}}}
	user := func(ctx context.Context) (string, bool) {
		md, _ := metadata.FromIncomingContext(ctx)
		u := first(md, "test-user")
		return u, u != ""
	}
	behindProxy := healthpb.NewHealthClient(dial(t, serve(t, newInterceptor(t, lim, Config{Rules: rules, User: user, TrustedProxies: []string{"127.0.0.1"}})).addr))
	direct := healthpb.NewHealthClient(dial(t, serve(t, newInterceptor(t, lim, Config{Rules: rules, User: user})).addr))
	tests := []struct {
		name   string
		client healthpb.HealthClient
		md     []string
		want   codes.Code
	}{
		{"api key", behindProxy, []string{"x-api-key", "k1"}, codes.OK},
		{"same api key, other server", direct, []string{"x-api-key", "k1"}, codes.ResourceExhausted},
		{"other api key", direct, []string{"x-api-key", "k2"}, codes.OK},
		{"user", direct, []string{"test-user", "alice"}, codes.OK},
		{"same user", behindProxy, []string{"test-user", "alice"}, codes.ResourceExhausted},
		{"forwarded client", behindProxy, []string{"x-forwarded-for", "203.0.113.7"}, codes.OK},
		{"same client, spoofed entries in front", behindProxy, []string{"x-forwarded-for", "1.2.3.4, 10.9.9.9, 203.0.113.7"}, codes.ResourceExhausted},
		{"IPv4-mapped form of the client", behindProxy, []string{"x-forwarded-for", "::ffff:203.0.113.7"}, codes.ResourceExhausted},
		{"peer 127.0.0.1, spoof ignored", direct, []string{"x-forwarded-for", "198.51.100.99"}, codes.OK},
		{"peer 127.0.0.1 again", direct, []string{"x-forwarded-for", "198.51.100.98"}, codes.ResourceExhausted},
		{"malformed entry stops at the proxy, 127.0.0.1", behindProxy, []string{"x-forwarded-for", "0x7f.0.0.1"}, codes.ResourceExhausted},
		{"IPv6 client", behindProxy, []string{"x-forwarded-for", "[2001:db8:1:2::1]:4711"}, codes.OK},
		{"same IPv6 /64", behindProxy, []string{"x-forwarded-for", "2001:db8:1:2:ffff::9"}, codes.ResourceExhausted},
	}
	for _, tt := range tests {
		ctx := metadata.NewOutgoingContext(ctxT(t), metadata.Pairs(tt.md...))
		if _, err := tt.client.Check(ctx, &healthpb.HealthCheckRequest{}); status.Code(err) != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
}

func TestShadowRule(t *testing.T) {
	var log logBuffer
	ic := newInterceptor(t, newLimiter(t), Config{Logger: log.logger(), Rules: RuleSet{
		Rules: []Rule{{Name: "trial", Method: mCheck, Shadow: true, Limits: []hybrid.Limit{hybrid.PerMinute(2)}}},
	}})
	ic.now = func() time.Time { return time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC) } // the log sampler's clock
	client := healthpb.NewHealthClient(dial(t, serve(t, ic).addr))
	ctx := ctxT(t)
	for i := range 5 {
		var md metadata.MD
		if _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Header(&md)); err != nil {
			t.Fatalf("call %d = %v, want OK: a shadow rule never blocks", i+1, err)
		}
		if len(md.Get(RateLimitMetadata)) != 0 || len(md.Get(PolicyMetadata)) != 0 {
			t.Errorf("call %d: metadata %v from a shadow rule", i+1, md)
		}
	}
	st := ic.Stats().Rules[0]
	if st.Allowed != 2 || st.ShadowDenied != 3 || st.Denied != 0 || !st.Shadow {
		t.Errorf("Stats = %+v, want 2 allowed, 3 shadow-denied", st)
	}
	if n := strings.Count(log.String(), "grpclimit: shadow rule would deny"); n != 1 {
		t.Errorf("log has %d shadow lines, want 1 (sampled):\n%s", n, log.String())
	}
	if !strings.Contains(log.String(), "rule=trial method=/grpc.health.v1.Health/Check") {
		t.Errorf("log does not name the rule and method:\n%s", log.String())
	}
	// The budget was charged: the rule, once enforced, denies at once.
	if err := ic.SetRules(RuleSet{Rules: []Rule{{Name: "trial", Method: mCheck, Limits: []hybrid.Limit{hybrid.PerMinute(2)}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("after enforcing: %v, want ResourceExhausted", err)
	}
}

// TestLeakyBucketHolds: a LeakyBucket rule holds calls for their Delay,
// refuses one that would wait past MaxDelay and gives its place back, as
// it does for a call whose deadline passes while held.
func TestLeakyBucketHolds(t *testing.T) {
	lim := newLimiter(t)
	// One every 100ms, a queue of 4: of calls made at once, the nth waits
	// (n-1)×100ms; the 4th would wait 300ms, above the 250ms allowed.
	leaky := hybrid.Limit{Algorithm: hybrid.LeakyBucket, Rate: 10, Period: time.Second, Burst: 4}
	var log logBuffer
	ic := newInterceptor(t, lim, Config{Logger: log.logger(), Rules: RuleSet{Default: &Rule{Limits: []hybrid.Limit{leaky}, MaxDelay: 250 * time.Millisecond}}})
	if !strings.Contains(log.String(), "lower the burst to 3") {
		t.Errorf("no warning about the queue outlasting MaxDelay:\n%s", log.String())
	}
	client := healthpb.NewHealthClient(dial(t, serve(t, ic).addr))
	ctx := ctxT(t)
	start := time.Now()
	errs := make([]error, 5)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { _, errs[i] = client.Check(ctx, &healthpb.HealthCheckRequest{}) })
	}
	wg.Wait()
	passed := 0
	for _, err := range errs {
		if err == nil {
			passed++
		} else if ms := retryOf(t, err, nil); ms > 150 {
			// Refused with a delay of 300 or 400 ms: in 50 or 150 ms it
			// would be held no more than MaxDelay.
			t.Errorf("retry in %dms, want at most 150ms", ms)
		}
	}
	// Calls that reach Redis more than 50ms apart find a shorter queue.
	if passed < 3 || passed == 5 {
		t.Errorf("%d of 5 calls at once passed, want 3 (4 if the machine spread them)", passed)
	}
	if took := time.Since(start); took < 200*time.Millisecond {
		t.Errorf("5 calls took %v, want the third held 200ms", took)
	}
	st := ic.Stats().Rules[0]
	if st.Allowed != 1 || st.Delayed != int64(passed-1) || st.Denied != int64(5-passed) {
		t.Errorf("Stats = %+v, want 1 allowed, %d delayed, %d denied", st, passed-1, 5-passed)
	}

	// The place of a refused call, and of a call whose deadline passes
	// while held, goes back.
	slow := hybrid.Limit{Algorithm: hybrid.LeakyBucket, Rate: 1, Period: time.Minute, Burst: 5}
	if err := ic.SetRules(RuleSet{Default: &Rule{Name: "slow", Limits: []hybrid.Limit{slow}, MaxDelay: time.Second}}); err != nil {
		t.Fatal(err)
	}
	rl := ic.eng.Rules().Default
	key := rl.KeyPrefix + "ip:127.0.0.1"
	remaining := func() int64 {
		t.Helper()
		r, err := lim.Peek(ctx, key, rl.Limits...)
		if err != nil {
			t.Fatal(err)
		}
		return r.Remaining
	}
	if _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	before := remaining()
	var trailer metadata.MD
	_, err := client.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Trailer(&trailer)) // would be held a minute
	if ms := retryOf(t, err, trailer); ms > 59_000 || ms < 58_000 {
		t.Errorf("retry in %dms, want just under 59s: then it would be held 1s, its MaxDelay", ms)
	}
	if after := remaining(); after != before {
		t.Errorf("queue after a refused call: remaining %d, want %d (its place given back)", after, before)
	}
	if err := ic.SetRules(RuleSet{Default: &Rule{Name: "slow", Limits: []hybrid.Limit{slow}, MaxDelay: time.Hour}}); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := client.Check(short, &healthpb.HealthCheckRequest{}); status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("call held past its deadline = %v, want DeadlineExceeded", err)
	}
	waitFor(t, "the place given back", func() bool { return remaining() == before })
}

func TestLimiterClosedPasses(t *testing.T) {
	lim := newLimiter(t)
	var log logBuffer
	ic := newInterceptor(t, lim, Config{Logger: log.logger(), Rules: RuleSet{Default: &Rule{Limits: perMin}}})
	client := healthpb.NewHealthClient(dial(t, serve(t, ic).addr))
	lim.Close()
	for range 3 {
		if _, err := client.Check(ctxT(t), &healthpb.HealthCheckRequest{}); err != nil {
			t.Fatalf("Check = %v, want OK after the Limiter's Close", err)
		}
	}
	if st := ic.Stats().Rules[0]; st.Errors != 3 {
		t.Errorf("Errors = %d, want 3", st.Errors)
	}
	if !strings.Contains(log.String(), "grpclimit: limiter failed") {
		t.Errorf("log = %q, want the failure", log.String())
	}
}

func TestFailOpenSendsThePolicyOnly(t *testing.T) {
	lim, err := hybrid.New(hybrid.Config{Addrs: []string{"127.0.0.1:1"}, OnFailure: hybrid.FailOpen, Timeout: 200 * time.Millisecond, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer lim.Close()
	ic := newInterceptor(t, lim, Config{Rules: RuleSet{Default: &Rule{Limits: perMin}}})
	client := healthpb.NewHealthClient(dial(t, serve(t, ic).addr))
	var md metadata.MD
	if _, err := client.Check(ctxT(t), &healthpb.HealthCheckRequest{}, grpc.Header(&md)); err != nil {
		t.Fatal(err)
	}
	if len(md.Get(PolicyMetadata)) != 1 || len(md.Get(RateLimitMetadata)) != 0 {
		t.Errorf("metadata = %v, want the policy only", md)
	}
}
