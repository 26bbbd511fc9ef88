package toxitest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain fails the package if a proxy's goroutines outlive Stop.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// startEcho starts a TCP echo server on loopback for the test; it stops,
// with its connections, when the test ends.
func startEcho(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for range 1000 {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() { _, _ = io.Copy(c, c); c.Close() })
		}
	})
	tb.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// dial connects to addr; the connection is closed when the test ends.
func dial(tb testing.TB, addr string) net.Conn {
	tb.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		tb.Fatalf("dial %s: %v", addr, err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// roundTrip writes msg on c and reads it back, and returns how long that
// took.
func roundTrip(t *testing.T, c net.Conn, msg string) time.Duration {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	t0 := time.Now()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatalf("write: %v", err)
	}
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatalf("read: %v", err)
	}
	if string(buf) != msg {
		t.Fatalf("read %q, want %q", buf, msg)
	}
	return time.Since(t0)
}

// TestAddLatencyDelaysInOrder: with a latency toxic on the replies, each
// reply chunk waits at least the latency less its jitter, and the chunks
// arrive in the order they were sent; removed, replies pass at once.
func TestAddLatencyDelaysInOrder(t *testing.T) {
	p, err := Start(startEcho(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	c := dial(t, p.Addr())
	fastest := func() time.Duration {
		best := time.Hour
		for i := range 5 {
			best = min(best, roundTrip(t, c, fmt.Sprintf("ping%d", i)))
		}
		return best
	}
	if d := fastest(); d > 15*time.Millisecond {
		t.Errorf("round trip without a toxic = %v, want well under 15ms", d)
	}

	const delay, jitter, n = 30 * time.Millisecond, 15 * time.Millisecond, 20
	name, err := p.AddLatency(Downstream, delay, jitter)
	if err != nil {
		t.Fatalf("AddLatency(%v, %v) = %v", delay, jitter, err)
	}
	// The messages go out 2 ms apart, so that the echo server sends most
	// of them back as chunks of their own, with delays drawn apart.
	sent := make([]time.Time, n)
	var want bytes.Buffer
	errc := make(chan error, 1)
	go func() {
		for i := range n {
			msg := fmt.Sprintf("m%02d;", i)
			sent[i] = time.Now()
			if _, err := c.Write([]byte(msg)); err != nil {
				errc <- err
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
		errc <- nil
	}()
	for i := range n {
		want.WriteString(fmt.Sprintf("m%02d;", i))
	}
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	got := make([]byte, 0, want.Len())
	arrived := make([]time.Time, 0, want.Len()) // per byte
	buf := make([]byte, 64)
	for range 1000 {
		if len(got) == want.Len() {
			break
		}
		k, err := c.Read(buf)
		now := time.Now()
		got = append(got, buf[:k]...)
		for range k {
			arrived = append(arrived, now)
		}
		if err != nil {
			t.Fatalf("read after %q: %v", got, err)
		}
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if string(got) != want.String() {
		t.Fatalf("read %q, want %q (in order)", got, want.String())
	}
	const msgLen = 4
	for i := range n {
		if d := arrived[(i+1)*msgLen-1].Sub(sent[i]); d < delay-jitter {
			t.Errorf("message %d came back after %v, want at least %v (%v ± %v)", i, d, delay-jitter, delay, jitter)
		}
	}

	if err := p.RemoveToxic(name); err != nil {
		t.Fatalf("RemoveToxic(%q) = %v", name, err)
	}
	if d := fastest(); d > 15*time.Millisecond {
		t.Errorf("round trip with the toxic removed = %v, want well under 15ms", d)
	}
	if err := p.RemoveToxic(name); err == nil {
		t.Errorf("RemoveToxic(%q) twice = nil, want an error", name)
	}
}

// TestDisableRestart: Disable cuts every connection and refuses new ones;
// Restart listens on the same address again; Stop refuses everything.
func TestDisableRestart(t *testing.T) {
	p, err := Start(startEcho(t))
	if err != nil {
		t.Fatal(err)
	}
	addr := p.Addr()
	c := dial(t, addr)
	roundTrip(t, c, "before")

	p.Disable()
	wantCut(t, c, "an open connection once disabled")
	if d, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		wantCut(t, d, "a new connection while disabled")
		d.Close()
	}

	if err := p.Restart(); err != nil {
		t.Fatalf("Restart() = %v", err)
	}
	if err := p.Restart(); err != nil {
		t.Errorf("Restart() of a started proxy = %v, want nil", err)
	}
	if got := p.Addr(); got != addr {
		t.Errorf("Addr() after Restart = %s, want %s", got, addr)
	}
	roundTrip(t, dial(t, addr), "up again")

	p.Stop()
	p.Stop() // idempotent
	if d, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		d.Close()
		t.Errorf("dial %s after Stop succeeded, want refused", addr)
	}
}

// wantCut checks that reading c fails at once, not by a timeout.
func wantCut(t *testing.T, c net.Conn, what string) {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	t0 := time.Now()
	_, _ = c.Write([]byte("x")) // may fail already
	_, err := c.Read(make([]byte, 8))
	switch {
	case err == nil:
		t.Errorf("%s: read succeeded, want it cut", what)
	case errors.Is(err, os.ErrDeadlineExceeded):
		t.Errorf("%s: read timed out after %v, want it cut at once", what, time.Since(t0))
	}
}

// BenchmarkRoundTrip measures a 16-byte round trip to an echo server,
// straight and through a proxy with no toxic: what the proxy in front of
// the victim of bench's -fault slow and flap costs before the fault.
func BenchmarkRoundTrip(b *testing.B) {
	echo := startEcho(b)
	for _, path := range []string{"direct", "proxy"} {
		b.Run("path="+path, func(b *testing.B) {
			addr := echo
			if path != "direct" {
				p := New(b, echo)
				addr = p.Addr()
			}
			c := dial(b, addr)
			msg, buf := []byte("0123456789abcdef"), make([]byte, 16)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Write(msg); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
