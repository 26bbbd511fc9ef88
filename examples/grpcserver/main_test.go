package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// start runs the server on a free loopback port with a copy of rules.yaml
// and returns its address and its Redis; the server stops, and run's error
// is checked, when the test ends.
func start(t *testing.T, extra ...string) (string, *miniredis.Miniredis) {
	t.Helper()
	m := miniredis.RunT(t)
	m.SetTime(time.Date(2030, 1, 2, 3, 4, 0, 0, time.UTC)) // round figures
	rules, err := os.ReadFile("rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(path, rules, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	// A generous -timeout: the tests count decisions, and a call that a
	// busy CI machine holds past 50 ms would be answered by the fallback.
	args := append([]string{"-listen", "127.0.0.1:0", "-metrics", "127.0.0.1:0", "-redis", m.Addr(), "-rules", path, "-timeout", "5s"}, extra...)
	go func() {
		done <- run(ctx, args, pw, io.Discard)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run = %v, want nil after its context ended", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("run did not return after its context ended")
		}
	})
	r := bufio.NewReader(pr)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the address: %v", err)
		}
		if addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on "); ok {
			go io.Copy(io.Discard, r)
			return addr, m
		}
	}
}

// call runs the client mode and returns what it printed.
func call(t *testing.T, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), append([]string{"-timeout", "5s"}, args...), &out, io.Discard); err != nil {
		t.Fatalf("run %q = %v", args, err)
	}
	return out.String()
}

func TestOKTurnsIntoResourceExhausted(t *testing.T) {
	addr, _ := start(t)
	got := call(t, "-call", addr, "-n", "6")
	want := `call 1: OK ratelimit="check";r=4;t=12
call 2: OK ratelimit="check";r=3;t=12
call 3: OK ratelimit="check";r=2;t=12
call 4: OK ratelimit="check";r=1;t=12
call 5: OK ratelimit="check";r=0;t=12
call 6: ResourceExhausted ratelimit="check";r=0;t=12
  message: Too many requests under rule "check"; retry in 12s.
  google.rpc.RetryInfo: retry_delay 12s
  google.rpc.QuotaFailure: subject "ip:127.0.0.1" quota_id "check" quota_value 5
  trailer grpc-retry-pushback-ms: 12000
`
	if got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
	// The pro tier has rules of its own; a forwarded address is not
	// believed from an untrusted peer.
	if got := call(t, "-call", addr, "-api-key", "alice-key"); !strings.HasPrefix(got, `call 1: OK ratelimit="check-pro-0";r=99;t=1`) {
		t.Errorf("pro tier: %s", got)
	}
	if got := call(t, "-call", addr, "-xff", "203.0.113.7"); !strings.Contains(got, "ResourceExhausted") {
		t.Errorf("spoofed x-forwarded-for: %s, want the peer's spent budget", got)
	}
}

func TestTrustedProxy(t *testing.T) {
	addr, _ := start(t, "-trusted-proxies", "127.0.0.1/32")
	for i, want := range []string{`r=4`, `r=3`} {
		if got := call(t, "-call", addr, "-xff", "198.51.100.1, 203.0.113.7"); !strings.Contains(got, want) {
			t.Errorf("call %d: %s, want %s", i+1, got, want)
		}
	}
	if got := call(t, "-call", addr, "-xff", "[2001:db8::1]:4711"); !strings.Contains(got, "r=4") {
		t.Errorf("another client: %s, want a budget of its own", got)
	}
}

func TestStreams(t *testing.T) {
	addr, _ := start(t)
	got := call(t, "-call", addr, "-method", "watch", "-n", "3")
	if !strings.Contains(got, `call 2: OK ratelimit="health";r=0;t=30`) || !strings.Contains(got, "call 3: ResourceExhausted") ||
		!strings.Contains(got, "trailer grpc-retry-pushback-ms: 30000") {
		t.Errorf("watch:\n%s", got)
	}
	got = call(t, "-call", addr, "-method", "chat", "-n", "2")
	if !strings.HasPrefix(got, `message 1: OK ratelimit="chat";r=4;t=1`) || !strings.Contains(got, "message 2: OK") {
		t.Errorf("chat:\n%s", got)
	}
	if got := call(t, "-call", addr, "-method", "say", "-n", "5"); strings.Count(got, ": OK") != 5 {
		t.Errorf("say, under a shadow rule:\n%s", got)
	}
}

func TestClientRules(t *testing.T) {
	addr, m := start(t)
	got := call(t, "-call", addr, "-redis", m.Addr(), "-client-rules", "client-rules.yaml", "-fail-fast", "-api-key", "k", "-n", "3")
	for _, want := range []string{"call 2: OK", "call 3: ResourceExhausted", `rule "partner"; retry in 1s.`, "retry_delay 1s",
		"client rule partner: 2 allowed, 0 after a wait, 1 refused before sending"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "trailer") {
		t.Errorf("a call refused before sending has a trailer:\n%s", got)
	}
	// Waiting within the deadline: Redis's clock is pinned, so the refill
	// never comes and the call is refused at once, past its deadline.
	got = call(t, "-call", addr, "-redis", m.Addr(), "-client-rules", "client-rules.yaml", "-api-key", "k", "-deadline", "500ms")
	if !strings.Contains(got, "call 1: ResourceExhausted") || !strings.Contains(got, "1 refused before sending") {
		t.Errorf("output:\n%s", got)
	}
}

func TestFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-listen", "0.0.0.0:50051"}, "not a loopback address"},
		{[]string{"-metrics", "192.0.2.1:9090"}, "not a loopback address"},
		{[]string{"-call", "127.0.0.1:1", "-method", "nope"}, `-method "nope"`},
		{[]string{"-rules", filepath.Join(t.TempDir(), "missing.yaml")}, "no such file"},
		{[]string{"extra"}, "unexpected arguments"},
	}
	for _, tt := range tests {
		err := run(context.Background(), tt.args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("run(%q) = %v, want an error containing %q", tt.args, err, tt.want)
		}
	}
}
