package main

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
)

// startEcho starts a TCP echo server on loopback for the test; it stops,
// with its connections, when the test ends.
func startEcho(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
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
	t.Cleanup(func() {
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

// startProxy starts a proxy in front of target, closed when the test ends.
func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	p, err := newProxy(target, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.close)
	return p
}

// dialProxy connects to p; the connection is closed when the test ends.
func dialProxy(t *testing.T, p *proxy) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", p.addr(), time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", p.addr(), err)
	}
	t.Cleanup(func() { c.Close() })
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

// TestProxyDelaysInOrder: each reply chunk waits at least the delay set,
// with its jitter, and the chunks arrive in the order they were sent.
func TestProxyDelaysInOrder(t *testing.T) {
	p := startProxy(t, startEcho(t))
	c := dialProxy(t, p)
	fastest := func() time.Duration {
		best := time.Hour
		for i := range 5 {
			best = min(best, roundTrip(t, c, fmt.Sprintf("ping%d", i)))
		}
		return best
	}
	if d := fastest(); d > 15*time.Millisecond {
		t.Errorf("round trip without delay = %v, want well under 15ms", d)
	}

	const delay, jitter, n = 30 * time.Millisecond, 0.5, 20
	p.setDelay(delay, jitter)
	floor := time.Duration(float64(delay) * (1 - jitter))
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
		if d := arrived[(i+1)*msgLen-1].Sub(sent[i]); d < floor {
			t.Errorf("message %d came back after %v, want at least %v (delay %v ± %.0f%%)", i, d, floor, delay, 100*jitter)
		}
	}

	p.setDelay(0, 0)
	if d := fastest(); d > 15*time.Millisecond {
		t.Errorf("round trip with the delay off again = %v, want well under 15ms", d)
	}
}

// TestProxyDownUp: down cuts every connection and refuses new ones; up
// lets new ones through; close refuses everything.
func TestProxyDownUp(t *testing.T) {
	p := startProxy(t, startEcho(t))
	c := dialProxy(t, p)
	roundTrip(t, c, "before")

	p.setDown(true)
	wantCut(t, c, "an open connection once down")
	for i := range 3 {
		// The proxy accepts and resets at once: a dial may succeed, its
		// first read fails.
		d, err := net.DialTimeout("tcp", p.addr(), time.Second)
		if err != nil {
			continue
		}
		wantCut(t, d, fmt.Sprintf("new connection %d while down", i))
		d.Close()
	}

	p.setDown(false)
	roundTrip(t, dialProxy(t, p), "up again")

	p.close()
	p.close() // idempotent
	if d, err := net.DialTimeout("tcp", p.addr(), time.Second); err == nil {
		d.Close()
		t.Errorf("dial %s after close succeeded, want refused", p.addr())
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

// BenchmarkProxyRoundTrip measures a 16-byte round trip to an echo
// server, straight and through the proxy with no delay: what the proxy in
// front of the victim of -fault slow and flap costs before the fault, on
// an idle machine. (On a busy one each of its goroutine hops also waits
// for a processor; see "Latency" in doc.go.)
func BenchmarkProxyRoundTrip(b *testing.B) {
	echo := startEcho(b)
	for _, path := range []string{"direct", "proxy"} {
		b.Run("path="+path, func(b *testing.B) {
			addr := echo
			if path != "direct" {
				p, err := newProxy(echo, 1)
				if err != nil {
					b.Fatal(err)
				}
				defer p.close()
				addr = p.addr()
			}
			c, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
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
