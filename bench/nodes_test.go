package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// selfSigned returns a TLS config with a fresh self-signed certificate
// for 127.0.0.1.
func selfSigned(t *testing.T) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "bench test"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
}

// TestNodesFlag runs bench on two nodes it did not start, one with a
// password and one with TLS and a database number, each holding a user's
// keys: the run must use them, leave the user's keys alone (no
// FLUSHALL), and leave none of its own behind.
func TestNodesFlag(t *testing.T) {
	plain := miniredis.RunT(t)
	plain.RequireAuth("s3cret")
	secure := miniredis.NewMiniRedis()
	if err := secure.StartTLS(selfSigned(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(secure.Close)
	for _, m := range []*miniredis.Miniredis{plain, secure} {
		m.Set("user:keep", "1")
		m.Set("rate:user:keep", "2")
		m.Set("hlb:{user:keep}:tb:1:1s", "3")
		m.DB(2).Set("user:keep", "4")
	}
	nodes := "redis://:s3cret@" + plain.Addr() + ",rediss://" + secure.Addr() + "/2?skip_verify=true"

	for _, mode := range [][]string{{"-workload", "hot"}, {"-workload", "zipf", "-keys", "1000"}, {"-sweep", "lease", "-workload", "hot", "-duration", "50ms"}} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"-nodes", nodes, "-duration", "150ms", "-concurrency", "4", "-instances", "2", "-json", "-out", t.TempDir()}, mode...)
		if err := run(t.Context(), args, &stdout, &stderr); err != nil {
			t.Fatalf("run(%q) = %v, stderr:\n%s", args, err, stderr.String())
		}
		if strings.Contains(stdout.String()+stderr.String(), "s3cret") {
			t.Errorf("run(%q) printed the password", args)
		}
		want := "nodes: 2 redis (version unknown) on " + plain.Addr() + ", " + secure.Addr() + "/2 (given with -nodes)"
		if !strings.HasPrefix(stderr.String(), want) {
			t.Errorf("stderr = %q, want it to start %q", stderr.String(), want)
		}
		for _, r := range results(t, stdout.String()) {
			if r.Errors != 0 || r.Decisions == 0 || r.Sources["fallback"] == r.Decisions {
				t.Errorf("result %+v: want decisions on the nodes, no errors", r)
			}
		}
		for i, m := range []*miniredis.Miniredis{plain, secure} {
			for _, k := range []string{"user:keep", "rate:user:keep", "hlb:{user:keep}:tb:1:1s"} {
				if !m.Exists(k) {
					t.Errorf("run(%q) deleted the user's key %q on node %d", args, k, i)
				}
			}
			if v, err := m.DB(2).Get("user:keep"); err != nil || v != "4" {
				t.Errorf("run(%q): node %d db 2 user:keep = %q, %v; want 4", args, i, v, err)
			}
			for db := range 3 {
				for _, k := range m.DB(db).Keys() {
					if strings.Contains(k, "hlbench:") {
						t.Errorf("run(%q) left its key %q on node %d db %d", args, k, i, db)
					}
				}
			}
		}
	}
}

func TestNodesUnreachable(t *testing.T) {
	m := miniredis.RunT(t)
	addr := m.Addr()
	m.Close()
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"-nodes", "redis://" + addr, "-duration", "50ms"}, &stdout, &stderr)
	if err == nil || exitCode(err) != 1 || !strings.Contains(err.Error(), addr) {
		t.Fatalf("run(-nodes down) = %v (exit %d), want an error naming %s (exit 1)", err, exitCode(err), addr)
	}
}

// TestProgressBar pretends stderr is a terminal: the bar is drawn there,
// and -q silences it.
func TestProgressBar(t *testing.T) {
	old := isTerminal
	isTerminal = func(io.Writer) bool { return true }
	t.Cleanup(func() { isTerminal = old })

	_, stderr := runBench(t, "-workload", "hot", "-duration", "300ms")
	if !strings.Contains(stderr, "hot/redis_rate") || !strings.Contains(stderr, "%") {
		t.Errorf("stderr = %q, want a progress bar naming hot/redis_rate", stderr)
	}
	_, stderr = runBench(t, "-workload", "hot", "-duration", "100ms", "-q")
	if s := withoutHybridLog(stderr); s != "" {
		t.Errorf("stderr with -q = %q, want nothing", s)
	}
	isTerminal = old
	_, stderr = runBench(t, "-workload", "hot", "-duration", "100ms")
	if s := withoutHybridLog(stderr); s != "" {
		t.Errorf("stderr not a terminal = %q, want nothing", s)
	}
}

// withoutHybridLog drops the lines of hybrid's own log from stderr: on a
// loaded machine a Limiter's startup probe of a miniredis node can pass
// its 50ms Timeout and log "hybrid: node not ready", which is no progress
// bar (TestProgressBar failed so under a full -race run).
func withoutHybridLog(stderr string) string {
	var keep []string
	for line := range strings.Lines(stderr) {
		if !strings.Contains(line, `msg="hybrid: `) {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "")
}
