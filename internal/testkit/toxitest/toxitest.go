// Package toxitest puts Shopify's toxiproxy, run in process, between a test
// and a real redis-server: latency, lost replies, resets, sliced or cut
// streams, and a proxy that stops and starts, on loopback ports only. Its
// HTTP API is never started.
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
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	p := toxiproxy.NewProxy(srv, fmt.Sprintf("redis-%d", seq.Add(1)), "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		tb.Fatalf("toxitest: start proxy to %s: %v", upstream, err)
	}
	px := &Proxy{p: p}
	tb.Cleanup(px.Stop)
	return px
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
	name := fmt.Sprintf("%s-%s-%d", typ, dir, seq.Add(1))
	body, err := json.Marshal(map[string]any{"name": name, "type": typ, "stream": dir, "toxicity": 1.0, "attributes": attrs})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := p.p.Toxics.AddToxicJson(bytes.NewReader(body)); err != nil {
		tb.Fatalf("toxitest: add %s toxic: %v", typ, err)
	}
	return name
}

// Latency delays every chunk in one direction by latency ± jitter (whole
// milliseconds) and returns the toxic's name.
func (p *Proxy) Latency(tb testing.TB, dir Direction, latency, jitter time.Duration) string {
	tb.Helper()
	return p.Add(tb, "latency", dir, map[string]any{"latency": latency.Milliseconds(), "jitter": jitter.Milliseconds()})
}

// Remove removes a toxic by name; data it held back is let through.
func (p *Proxy) Remove(tb testing.TB, name string) {
	tb.Helper()
	if err := p.p.Toxics.RemoveToxic(context.Background(), name); err != nil {
		tb.Fatalf("toxitest: remove %s: %v", name, err)
	}
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
	if err := p.p.Start(); err != nil && !errors.Is(err, toxiproxy.ErrProxyAlreadyStarted) {
		tb.Fatalf("toxitest: restart proxy: %v", err)
	}
}

// Stop removes the toxics and closes the proxy and its connections.
func (p *Proxy) Stop() {
	p.Reset()
	p.p.Stop()
}
