package redistest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// CertFiles are the PEM files of a private CA, a server certificate for
// 127.0.0.1 and a client certificate, both signed by the CA.
type CertFiles struct {
	// CA is the CA's certificate; ServerCert and ServerKey the server's
	// certificate and key; ClientCert and ClientKey the client's. Each is
	// the path of a PEM file.
	CA, ServerCert, ServerKey, ClientCert, ClientKey string

	pool *x509.CertPool
}

// Pool is a pool holding the CA alone.
func (f CertFiles) Pool() *x509.CertPool { return f.pool }

// PrivateCA writes a fresh CA, a server certificate for 127.0.0.1 and a
// client certificate into dir, valid for an hour either way of now.
func PrivateCA(tb testing.TB, dir string) CertFiles {
	tb.Helper()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			tb.Fatal(err)
		}
		return k
	}
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			tb.Fatal(err)
		}
		return p
	}
	caKey := newKey()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "redistest CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		tb.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		tb.Fatal(err)
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
			tb.Fatal(err)
		}
		kder, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			tb.Fatal(err)
		}
		return write(prefix+".pem", "CERTIFICATE", der), write(prefix+".key", "EC PRIVATE KEY", kder)
	}
	f := CertFiles{CA: write("ca.pem", "CERTIFICATE", caDER), pool: x509.NewCertPool()}
	f.pool.AddCert(ca)
	f.ServerCert, f.ServerKey = leaf(2, "127.0.0.1", x509.ExtKeyUsageServerAuth, "server")
	f.ClientCert, f.ClientKey = leaf(3, "redistest client", x509.ExtKeyUsageClientAuth, "client")
	return f
}

// StartTLS starts a redis-server that also speaks TLS, with f's server
// certificate, on a port of its own, and returns that port's address.
// clientAuth makes it require a client certificate signed by f's CA. The
// server stops when the test ends.
func StartTLS(tb testing.TB, f CertFiles, clientAuth bool, opts ...Option) (*Server, string) {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	auth := "no"
	if clientAuth {
		auth = "yes"
	}
	opts = append(opts, WithArgs("--tls-port", strconv.Itoa(port), "--tls-cert-file", f.ServerCert,
		"--tls-key-file", f.ServerKey, "--tls-ca-cert-file", f.CA, "--tls-auth-clients", auth))
	return Start(tb, opts...), net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}
