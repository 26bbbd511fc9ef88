// Package toxitest puts Shopify's toxiproxy, run in process, between a test
// and a real redis-server: latency, lost replies, resets, sliced or cut
// streams, and a proxy that stops and starts, on loopback ports only. Its
// HTTP API is never started. Tests use New and the methods that take a
// testing.TB; a program (bench) uses Start, Stop and the methods that
// return an error.
package toxitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Direction is the stream a toxic applies to.
type Direction string

const (
	// Upstream is the client's commands on their way to Redis.
	Upstream Direction = "upstream"
	// Downstream is Redis's replies on their way to the client.
	Downstream Direction = "downstream"
)

var seq atomic.Int64

// Proxy is one toxiproxy proxy in front of an upstream address. It is safe
// for concurrent use.
type Proxy struct {
	p *toxiproxy.Proxy
}

// New starts a proxy on a free loopback port in front of upstream
// ("host:port") and stops it when the test ends.
func New(tb testing.TB, upstream string) *Proxy {
	tb.Helper()
	px, err := Start(upstream)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(px.Stop)
	return px
}

// Start starts a proxy on a free loopback port in front of upstream
// ("host:port"), for a program rather than a test: the caller calls Stop.
func Start(upstream string) (*Proxy, error) {
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	p := toxiproxy.NewProxy(srv, fmt.Sprintf("redis-%d", seq.Add(1)), "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("toxitest: start proxy to %s: %w", upstream, err)
	}
	return &Proxy{p: p}, nil
}

// Addr is the proxy's listening address: give it to the client.
func (p *Proxy) Addr() string {
	p.p.Lock()
	defer p.p.Unlock()
	return p.p.Listen
}

// Add adds a toxic of the given type ("latency", "timeout", "reset_peer",
// "limit_data", "slicer", "bandwidth", "slow_close") to one direction, with
// the toxic's attributes, and returns its name for Remove.
func (p *Proxy) Add(tb testing.TB, typ string, dir Direction, attrs map[string]any) string {
	tb.Helper()
	name, err := p.AddToxic(typ, dir, attrs)
	if err != nil {
		tb.Fatal(err)
	}
	return name
}

// AddToxic is Add for a program: it returns the error instead of failing
// a test.
func (p *Proxy) AddToxic(typ string, dir Direction, attrs map[string]any) (string, error) {
	name := fmt.Sprintf("%s-%s-%d", typ, dir, seq.Add(1))
	body, err := json.Marshal(map[string]any{"name": name, "type": typ, "stream": dir, "toxicity": 1.0, "attributes": attrs})
	if err != nil {
		return "", fmt.Errorf("toxitest: %s toxic: %w", typ, err)
	}
	if _, err := p.p.Toxics.AddToxicJson(bytes.NewReader(body)); err != nil {
		return "", fmt.Errorf("toxitest: add %s toxic: %w", typ, err)
	}
	return name, nil
}

// Latency delays every chunk in one direction by latency ± jitter (whole
// milliseconds) and returns the toxic's name.
func (p *Proxy) Latency(tb testing.TB, dir Direction, latency, jitter time.Duration) string {
	tb.Helper()
	name, err := p.AddLatency(dir, latency, jitter)
	if err != nil {
		tb.Fatal(err)
	}
	return name
}

// AddLatency is Latency for a program: it returns the error instead of
// failing a test. Each chunk is held latency ± jitter after it was read,
// and never overtakes the chunk before it.
func (p *Proxy) AddLatency(dir Direction, latency, jitter time.Duration) (string, error) {
	return p.AddToxic("latency", dir, map[string]any{"latency": latency.Milliseconds(), "jitter": jitter.Milliseconds()})
}

// Remove removes a toxic by name; data it held back is let through.
func (p *Proxy) Remove(tb testing.TB, name string) {
	tb.Helper()
	if err := p.RemoveToxic(name); err != nil {
		tb.Fatal(err)
	}
}

// RemoveToxic is Remove for a program: it returns the error instead of
// failing a test.
func (p *Proxy) RemoveToxic(name string) error {
	if err := p.p.Toxics.RemoveToxic(context.Background(), name); err != nil {
		return fmt.Errorf("toxitest: remove %s: %w", name, err)
	}
	return nil
}

// Reset removes every toxic.
func (p *Proxy) Reset() { p.p.Toxics.ResetToxics(context.Background()) }

// Disable stops listening and closes every connection through the proxy:
// the node looks down (connections refused).
func (p *Proxy) Disable() { p.p.Stop() }

// Enable listens again on the same address; an enabled proxy stays as it
// is.
func (p *Proxy) Enable(tb testing.TB) {
	tb.Helper()
	if err := p.Restart(); err != nil {
		tb.Fatal(err)
	}
}

// Restart is Enable for a program: it returns the error (the address taken
// meanwhile, say) instead of failing a test.
func (p *Proxy) Restart() error {
	if err := p.p.Start(); err != nil && !errors.Is(err, toxiproxy.ErrProxyAlreadyStarted) {
		return fmt.Errorf("toxitest: restart proxy: %w", err)
	}
	return nil
}

// Stop removes the toxics and closes the proxy and its connections.
func (p *Proxy) Stop() {
	p.Reset()
	p.p.Stop()
}
