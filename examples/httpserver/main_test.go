package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
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
// and returns its base URL; the server stops, and run's error is checked,
// when the test ends.
func start(t *testing.T, extra ...string) string {
	t.Helper()
	m := miniredis.RunT(t)
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
	args := append([]string{"-listen", "127.0.0.1:0", "-redis", m.Addr(), "-rules", path, "-timeout", "5s"}, extra...)
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
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the address: %v", err)
	}
	go io.Copy(io.Discard, pr)
	return strings.TrimSpace(strings.TrimPrefix(line, "listening on "))
}

func get(t *testing.T, c *http.Client, url string, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

func TestServer(t *testing.T) {
	base := start(t)
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for i := range 5 {
		resp, _ := get(t, c, base+"/api/search?q=go")
		if resp.StatusCode != 200 {
			t.Fatalf("search %d = %d, want 200", i+1, resp.StatusCode)
		}
	}
	resp, body := get(t, c, base+"/api/search?q=go")
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, "quota-exceeded") {
		t.Errorf("search 6 = %d %v %s, want 429 with Retry-After and a problem body", resp.StatusCode, resp.Header, body)
	}
	// The pro tier has a rule of its own.
	resp, _ = get(t, c, base+"/api/search?q=go", "Authorization", "Bearer alice-token")
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("RateLimit"), `"search-pro-`) {
		t.Errorf("pro search = %d, RateLimit %q; want 200 under search-pro", resp.StatusCode, resp.Header.Get("RateLimit"))
	}
	resp, body = get(t, c, base+"/metrics")
	if resp.StatusCode != 200 || !strings.Contains(body, `hybridlimit_http_requests_total{outcome="denied",rule="search"} 1`) {
		t.Errorf("metrics = %d:\n%s", resp.StatusCode, body)
	}
}

func TestServerFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"all interfaces", []string{"-listen", ":8080"}, "not a loopback address"},
		{"public address", []string{"-listen", "0.0.0.0:0"}, "pass -public"},
		{"bad headers", []string{"-listen", "127.0.0.1:0", "-headers", "fancy"}, "-headers"},
		{"missing rules", []string{"-listen", "127.0.0.1:0", "-rules", filepath.Join(t.TempDir(), "none.yaml")}, "no such file"},
		{"stray argument", []string{"extra"}, "unexpected arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := run(context.Background(), tt.args, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("run(%q) = %v, want an error containing %q", tt.args, err, tt.want)
			}
		})
	}
}
