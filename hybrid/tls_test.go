package hybrid

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
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

	"github.com/redis/go-redis/v9"

	"github.com/hybridlimit/hybridlimit/internal/redistest"
	"github.com/hybridlimit/hybridlimit/remote"
)

// privateCA writes a CA and a server certificate for 127.0.0.1 it signed
// into dir, and returns the CA's pool and the files' paths.
func privateCA(t *testing.T, dir string) (pool *x509.CertPool, caFile, certFile, keyFile string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pool = x509.NewCertPool()
	pool.AddCert(caCert)
	return pool, write("ca.pem", "CERTIFICATE", caDER), write("server.pem", "CERTIFICATE", leafDER), write("server.key", "EC PRIVATE KEY", keyDER)
}

// TestTLS: a node that speaks TLS with a certificate from a private CA
// works with a client that trusts the CA, and is a startup error
// (ErrMisconfigured, certificate verification) for one that does not.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	pool, ca, cert, key := privateCA(t, dir)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	redistest.Start(t, redistest.WithArgs("--tls-port", strconv.Itoa(port), "--tls-cert-file", cert, "--tls-key-file", key,
		"--tls-ca-cert-file", ca, "--tls-auth-clients", "no"))
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))

	rdb := remote.NewClient(&redis.Options{Addr: addr, TLSConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}})
	defer rdb.Close()
	lim, err := New(Config{Nodes: []Node{{Name: "tls", Client: rdb}}, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r, err := lim.Allow(context.Background(), "k", PerMinute(5))
	lim.Close()
	if err != nil || r.Source != SourceRemote {
		t.Fatalf("Allow over TLS = %+v, %v; want decided by Redis", r, err)
	}

	lim, err = New(Config{Addrs: []string{"rediss://" + addr}})
	if err == nil {
		lim.Close()
		t.Fatal("New with a certificate the client does not trust = nil error")
	}
	if !errors.Is(err, ErrMisconfigured) || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("New error = %v; want ErrMisconfigured about the certificate", err)
	}
}
