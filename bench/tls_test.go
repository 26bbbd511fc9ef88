package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hybridlimit/hybridlimit/internal/redistest"
)

// certFiles are the PEM files of a private CA, a server certificate for
// 127.0.0.1 and a client certificate, both signed by the CA.
type certFiles struct {
	ca, serverCert, serverKey, clientCert, clientKey string
}

// privateCA writes a CA, a server certificate for 127.0.0.1 and a client
// certificate into dir.
func privateCA(t *testing.T, dir string) certFiles {
	t.Helper()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	caKey := newKey()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "bench test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	leaf := func(serial int64, name string, usage x509.ExtKeyUsage, prefix string) (string, string) {
		k := newKey()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
		if usage == x509.ExtKeyUsageServerAuth {
			tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return write(prefix+".pem", "CERTIFICATE", der), write(prefix+".key", "EC PRIVATE KEY", kder)
	}
	f := certFiles{ca: write("ca.pem", "CERTIFICATE", caDER)}
	f.serverCert, f.serverKey = leaf(2, "127.0.0.1", x509.ExtKeyUsageServerAuth, "server")
	f.clientCert, f.clientKey = leaf(3, "bench", x509.ExtKeyUsageClientAuth, "client")
	return f
}

// TestTLSFlags runs bench on a redis-server that speaks TLS only with a
// certificate from a private CA and requires a client certificate from
// it (--tls-auth-clients yes): with -tls-ca, -tls-cert and -tls-key both
// systems decide on it; without the CA the server is not trusted, and
// without the client certificate the server refuses bench, each an error
// (exit 1, not a usage error). Bounded: three runs of 150ms plus the
// startup, a few seconds.
func TestTLSFlags(t *testing.T) {
	redisOnly(t)
	dir := t.TempDir()
	f := privateCA(t, dir)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	redistest.Start(t, redistest.WithArgs("--tls-port", strconv.Itoa(port), "--tls-cert-file", f.serverCert,
		"--tls-key-file", f.serverKey, "--tls-ca-cert-file", f.ca, "--tls-auth-clients", "yes"))
	url := "rediss://127.0.0.1:" + strconv.Itoa(port)

	base := []string{"-nodes", url, "-workload", "hot", "-duration", "150ms", "-concurrency", "4", "-instances", "2", "-json"}
	var stdout, stderr bytes.Buffer
	args := append(base, "-tls-ca", f.ca, "-tls-cert", f.clientCert, "-tls-key", f.clientKey)
	if err := run(t.Context(), args, &stdout, &stderr); err != nil {
		t.Fatalf("run(%q) = %v, stderr:\n%s", args, err, stderr.String())
	}
	rs := results(t, stdout.String())
	if len(rs) != 2 {
		t.Fatalf("%d results, want 2 (hybridlimit and redis_rate):\n%s", len(rs), stdout.String())
	}
	for _, r := range rs {
		if r.Errors != 0 || r.Decisions == 0 || r.Sources["fallback"] != 0 || !strings.HasPrefix(r.Nodes, "redis-server ") {
			t.Errorf("result %+v: want decisions on redis-server over TLS, no errors, no fallback", r)
		}
	}

	for _, tt := range []struct {
		name string
		args []string
	}{
		{"no client certificate", append(base, "-tls-ca", f.ca)},
		{"server not trusted", append(base, "-tls-cert", f.clientCert, "-tls-key", f.clientKey)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := run(t.Context(), tt.args, &bytes.Buffer{}, &bytes.Buffer{})
			if err == nil || errors.Is(err, errUsage) || !strings.Contains(err.Error(), "127.0.0.1:"+strconv.Itoa(port)) {
				t.Errorf("run(%q) = %v, want an error naming the node (not a usage error)", tt.args, err)
			}
		})
	}
}
