package httplimit_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/hybridlimit/hybridlimit/httplimit"
	"github.com/hybridlimit/hybridlimit/hybrid"
)

func ExampleMiddleware_Wrap() {
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

	rules, err := httplimit.ParseRules([]byte(`
rules:
  - name: search
    route: GET /search
    limits: [{rate: 2, period: 1m}]
default:
  limits: [{rate: 100, period: 1m}]
`))
	if err != nil {
		log.Fatal(err)
	}
	mw, err := httplimit.New(lim, httplimit.Config{Rules: rules})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /search", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "results")
	})
	h := mw.Wrap(mux)

	for range 3 {
		r := httptest.NewRequest("GET", "/search?q=go", nil)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Printf("%d RateLimit: %s Retry-After: %q\n", w.Code, w.Header().Get("RateLimit"), w.Header().Get("Retry-After"))
	}
	// Output:
	// 200 RateLimit: "search";r=1;t=30 Retry-After: ""
	// 200 RateLimit: "search";r=0;t=30 Retry-After: ""
	// 429 RateLimit: "search";r=0;t=30 Retry-After: "30"
}

func ExampleParseRules() {
	rules, err := httplimit.ParseRules([]byte(`
rules:
  - name: login
    route: POST /login
    key: ip
    limits:
      - {rate: 5, period: 1m}
      - {rate: 20, period: 1h}
  - name: pro
    tier: pro
    key: [api-key, user]
    limits: [{rate: 1000, period: 1m, burst: 2000}]
  - name: upload
    route: POST /upload/
    limits: [{algorithm: leaky-bucket, rate: 2, period: 1s, burst: 3}]
    max_delay: 1s
default:
  limits: [{rate: 100, period: 1m}]
`))
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range rules.Rules {
		fmt.Printf("%s %q tier=%q key=%v %v\n", r.Name, r.Route, r.Tier, r.Key, r.Limits)
	}
	fmt.Println(rules.Default.Limits)
	// Output:
	// login "POST /login" tier="" key=ip [TokenBucket(5/1m0s, burst 5) TokenBucket(20/1h0m0s, burst 20)]
	// pro "" tier="pro" key=api-key|user [TokenBucket(1000/1m0s, burst 2000)]
	// upload "POST /upload/" tier="" key=api-key|user|ip [LeakyBucket(2/1s, burst 3)]
	// [TokenBucket(100/1m0s, burst 100)]
}

func ExampleNew_trustedProxies() {
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

	// Behind a load balancer in 10.0.0.0/8 that appends to X-Forwarded-For:
	// one request a minute per client.
	mw, err := httplimit.New(lim, httplimit.Config{
		TrustedProxies: []string{"10.0.0.0/8"},
		Rules:          httplimit.RuleSet{Default: &httplimit.Rule{Limits: []hybrid.Limit{hybrid.PerMinute(1)}}},
		Logger:         slog.New(slog.DiscardHandler),
	})
	if err != nil {
		log.Fatal(err)
	}
	h := mw.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	send := func(peer, xff string) int {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = peer
		r.Header.Set("X-Forwarded-For", xff)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	fmt.Println(send("10.0.0.1:1234", "203.0.113.7"))
	// The same client, a spoofed entry in front: still 203.0.113.7.
	fmt.Println(send("10.0.0.2:1234", "198.51.100.99, 203.0.113.7"))
	// A client talking directly: its header is not believed.
	fmt.Println(send("192.0.2.50:1234", "198.51.100.99"))
	// Output:
	// 200
	// 429
	// 200
}

// Rules from a YAML file, put in force again whenever the file changes. A
// rule's limits are named after it ("search#0"), so raising a limit keeps
// what each client has used.
func ExampleMiddleware_Watch() {
	m, err := miniredis.Run()
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	m.SetTime(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	lim, err := hybrid.New(hybrid.Config{Addrs: []string{m.Addr()}, Timeout: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer lim.Close()

	dir, err := os.MkdirTemp("", "rules")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "rules.yaml")
	writeRules := func(rate int) { // as an editor saves: a new file renamed over the old
		yaml := fmt.Sprintf("rules:\n  - name: search\n    route: GET /search\n    limits: [{rate: %d, period: 1m}]\n", rate)
		if err := os.WriteFile(path+".tmp", []byte(yaml), 0o644); err != nil {
			log.Fatal(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			log.Fatal(err)
		}
	}
	writeRules(1)

	rules, err := httplimit.LoadRules(path)
	if err != nil {
		log.Fatal(err)
	}
	mw, err := httplimit.New(lim, httplimit.Config{Rules: rules, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		log.Fatal(err)
	}
	h := mw.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	get := func() int {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/search", nil))
		return w.Code
	}
	fmt.Println("1 a minute:", get(), get())

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mw.Watch(ctx, path) }()
	writeRules(3)
	for deadline := time.Now().Add(10 * time.Second); mw.Rules().Rules[0].Limits[0].Rate != 3; {
		if time.Now().After(deadline) {
			log.Fatal("the new rules were not put in force")
		}
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Println("3 a minute:", get(), get(), get())
	cancel()
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	// Output:
	// 1 a minute: 200 429
	// 3 a minute: 200 200 429
}
