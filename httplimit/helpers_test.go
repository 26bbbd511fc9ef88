package httplimit

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/hybridlimit/hybridlimit/hybrid"
)

// quiet is a logger for tests that do not read the log.
var quiet = slog.New(slog.DiscardHandler)

// newMini returns a Limiter over one miniredis node, with leases off so
// that every figure comes from Redis, and a generous Timeout so that a
// busy machine does not fall back.
func newMini(t testing.TB) (*hybrid.Limiter, *miniredis.Miniredis) {
	t.Helper()
	m := miniredis.RunT(t)
	lim, err := hybrid.New(hybrid.Config{
		Addrs:   []string{m.Addr()},
		Timeout: 2 * time.Second,
		Lease:   hybrid.LeaseConfig{Disable: true},
		Logger:  quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lim.Close() })
	return lim, m
}

// newMiddleware returns a Middleware over lim; cfg.Logger defaults to quiet.
func newMiddleware(t testing.TB, lim *hybrid.Limiter, cfg Config) *Middleware {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	mw, err := New(lim, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return mw
}

// ok is the handler behind the middleware in tests.
var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	io.WriteString(w, "ok")
})

// do sends one request through h.
func do(h http.Handler, method, target string, header ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, nil)
	r.RemoteAddr = "198.51.100.1:5000"
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "RemoteAddr" {
			r.RemoteAddr = header[i+1]
			continue
		}
		r.Header.Add(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
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

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }
