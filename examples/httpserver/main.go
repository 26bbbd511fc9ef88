// Command httpserver is a small HTTP service rate-limited by package
// httplimit, with rules from a YAML file it reloads when the file changes,
// and Prometheus metrics on /metrics.
//
//	go run ./examples/httpserver -redis 127.0.0.1:6379 -rules examples/httpserver/rules.yaml
//
// It listens on 127.0.0.1:8080 by default and refuses an address that is
// not loopback unless -public is given. Two demo bearer tokens stand for
// authenticated users: "alice-token" (tier pro) and "bob-token" (tier
// free).
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

	"github.com/hybridlimit/hybridlimit/httplimit"
	"github.com/hybridlimit/hybridlimit/hybrid"
	"github.com/hybridlimit/hybridlimit/promlimit"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "httpserver:", err)
		os.Exit(1)
	}
}

// run parses the flags, serves until ctx ends, then shuts down gracefully.
// It writes "listening on http://ADDR" to stdout once it accepts requests.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("httpserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:8080", "`address` to listen on; loopback only unless -public")
	public := fs.Bool("public", false, "allow a -listen address that is not loopback")
	redisAddrs := fs.String("redis", "127.0.0.1:6379", "comma-separated Redis `addresses` (host:port), one node each")
	rulesPath := fs.String("rules", "rules.yaml", "YAML rules `file`, reloaded when it changes")
	trusted := fs.String("trusted-proxies", "", "comma-separated `CIDRs` of proxies whose X-Forwarded-For is believed")
	headers := fs.String("headers", "draft", "rate-limit header fields: draft, legacy, both or none")
	timeout := fs.Duration("timeout", 0, "bound on each Redis call (hybrid.Config.Timeout); 0 means the library's default, 50ms")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := checkLoopback(*listen, *public); err != nil {
		return err
	}
	style, ok := map[string]httplimit.HeaderStyle{
		"draft": httplimit.HeadersDraft, "legacy": httplimit.HeadersLegacy,
		"both": httplimit.HeadersBoth, "none": httplimit.HeadersNone,
	}[*headers]
	if !ok {
		return fmt.Errorf("-headers %q: want draft, legacy, both or none", *headers)
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))

	rules, err := httplimit.LoadRules(*rulesPath)
	if err != nil {
		return err
	}
	lim, err := hybrid.New(hybrid.Config{Addrs: splitList(*redisAddrs), Timeout: *timeout, Logger: logger})
	if err != nil {
		return err
	}
	defer lim.Close()
	mw, err := httplimit.New(lim, httplimit.Config{
		Rules:          rules,
		TrustedProxies: splitList(*trusted),
		User:           demoUser,
		Tier:           demoTier,
		Headers:        style,
		Logger:         logger,
	})
	if err != nil {
		return err
	}
	collector, err := promlimit.New(lim, promlimit.Config{HTTP: mw})
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector)

	root := http.NewServeMux()
	root.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{})) // not limited
	root.Handle("/", mw.Wrap(app()))

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: root, ReadHeaderTimeout: 5 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := mw.Watch(ctx, *rulesPath); err != nil {
			logger.Error("watching rules", "err", err)
		}
	})
	serveErr := make(chan error, 1)
	wg.Go(func() { serveErr <- srv.Serve(ln) })
	fmt.Fprintf(stdout, "listening on http://%s\n", ln.Addr())

	select {
	case <-ctx.Done():
		err = nil
	case err = <-serveErr:
	}
	cancel()
	shutdownCtx, done := context.WithTimeout(context.Background(), 5*time.Second)
	defer done()
	if serr := srv.Shutdown(shutdownCtx); serr != nil && err == nil {
		err = serr
	}
	wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// checkLoopback refuses an address reachable from other machines unless
// public is set.
func checkLoopback(addr string, public bool) error {
	if public {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-listen %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("-listen %q is not a loopback address; pass -public to serve other machines", addr)
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

// demoUsers stands for a real authentication layer: bearer token to user
// and tier.
var demoUsers = map[string]struct{ user, tier string }{
	"alice-token": {"alice", "pro"},
	"bob-token":   {"bob", "free"},
}

func demoUser(r *http.Request) (string, bool) {
	u, ok := demoUsers[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
	return u.user, ok
}

func demoTier(r *http.Request) string {
	return demoUsers[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")].tier
}

// app is the service behind the middleware.
func app() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello\n")
	})
	mux.HandleFunc("GET /api/search", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "results for %q\n", r.URL.Query().Get("q"))
	})
	mux.HandleFunc("GET /api/items/{id}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "item %s\n", r.PathValue("id"))
	})
	mux.HandleFunc("POST /api/upload", func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, 1<<20))
		fmt.Fprintf(w, "received %d bytes\n", n)
	})
	mux.HandleFunc("/api/v2/", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "v2\n")
	})
	return mux
}
