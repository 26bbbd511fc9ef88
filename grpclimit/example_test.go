package grpclimit_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"time"

	"github.com/alicebob/miniredis/v2"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/hybridlimit/hybridlimit/grpclimit"
	"github.com/hybridlimit/hybridlimit/hybrid"
)

func ExampleInterceptor_Unary() {
	// An in-process Redis for the example, its clock pinned so that the
	// output is stable; a service passes the addresses of its nodes.
	m, err := miniredis.Run()
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	m.SetTime(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	// A Timeout above the default 50 ms keeps this output stable on a busy
	// test machine; a service keeps the default.
	lim, err := hybrid.New(hybrid.Config{Addrs: []string{m.Addr()}, Timeout: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer lim.Close()

	rules, err := grpclimit.ParseRules([]byte(`
rules:
  - name: check
    method: /grpc.health.v1.Health/Check
    limits: [{rate: 2, period: 1m}]
default:
  limits: [{rate: 100, period: 1m}]
`))
	if err != nil {
		log.Fatal(err)
	}
	ic, err := grpclimit.New(lim, grpclimit.Config{Rules: rules})
	if err != nil {
		log.Fatal(err)
	}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(ic.Unary()), grpc.ChainStreamInterceptor(ic.Stream()))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(ln) //nolint:errcheck // Stop ends it
	defer srv.Stop()

	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	client := healthpb.NewHealthClient(conn)
	for range 3 {
		var md metadata.MD
		_, err := client.Check(context.Background(), &healthpb.HealthCheckRequest{}, grpc.Header(&md))
		st := status.Convert(err)
		fmt.Printf("%v ratelimit: %s\n", st.Code(), md.Get("ratelimit"))
		for _, d := range st.Details() {
			switch d := d.(type) {
			case *errdetails.RetryInfo:
				fmt.Println("  retry in", d.GetRetryDelay().AsDuration())
			case *errdetails.QuotaFailure:
				v := d.GetViolations()[0]
				fmt.Printf("  quota %s (%d) for %s\n", v.GetQuotaId(), v.GetQuotaValue(), v.GetSubject())
			}
		}
	}
	// Output:
	// OK ratelimit: ["check";r=1;t=30]
	// OK ratelimit: ["check";r=0;t=30]
	// ResourceExhausted ratelimit: ["check";r=0;t=30]
	//   retry in 30s
	//   quota check (2) for ip:127.0.0.1
}

func ExampleInterceptor_UnaryClient() {
	m, err := miniredis.Run()
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	lim, err := hybrid.New(hybrid.Config{Addrs: []string{m.Addr()}, Timeout: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer lim.Close()

	// One budget for the calls every instance makes to a third-party
	// service: one a minute here, refused at once when spent.
	out, err := grpclimit.New(lim, grpclimit.Config{
		Prefix:   "grpc-out:",
		FailFast: true,
		Rules: grpclimit.RuleSet{Rules: []grpclimit.Rule{
			{Name: "partner", Method: "/grpc.health.v1.Health/*", Limits: []hybrid.Limit{hybrid.PerMinute(1)}},
		}},
	})
	if err != nil {
		log.Fatal(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(ln) //nolint:errcheck // Stop ends it
	defer srv.Stop()

	conn, err := grpc.NewClient(ln.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(out.UnaryClient()),
		grpc.WithStreamInterceptor(out.StreamClient()),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	client := healthpb.NewHealthClient(conn)
	for range 2 {
		_, err := client.Check(context.Background(), &healthpb.HealthCheckRequest{})
		fmt.Println(status.Code(err))
	}
	fmt.Println(out.Stats().Rules[0].Allowed, "sent,", out.Stats().Rules[0].Denied, "refused before sending")
	// Output:
	// OK
	// ResourceExhausted
	// 1 sent, 1 refused before sending
}

func ExampleParseRules() {
	rules, err := grpclimit.ParseRules([]byte(`
rules:
  - name: search
    method: /shop.Catalog/Search
    key: [api-key, user]
    limits:
      - {rate: 5, period: 1s}
      - {rate: 1000, period: 1h}
  - name: catalog
    method: /shop.Catalog/*
    limits: [{rate: 100, period: 1s}]
  - name: upload
    method: /shop.Files/Upload
    per_message: true
    limits: [{algorithm: leaky-bucket, rate: 20, period: 1s, burst: 10}]
    max_delay: 500ms
default:
  limits: [{rate: 600, period: 1m}]
`))
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range rules.Rules {
		fmt.Printf("%s %s key=%v per_message=%v %v\n", r.Name, r.Method, r.Key, r.PerMessage, r.Limits)
	}
	fmt.Println(rules.Default.Limits)
	// Output:
	// search /shop.Catalog/Search key=api-key|user per_message=false [TokenBucket(5/1s, burst 5) TokenBucket(1000/1h0m0s, burst 1000)]
	// catalog /shop.Catalog/* key=api-key|user|ip per_message=false [TokenBucket(100/1s, burst 100)]
	// upload /shop.Files/Upload key=api-key|user|ip per_message=true [LeakyBucket(20/1s, burst 10)]
	// [TokenBucket(600/1m0s, burst 600)]
}
