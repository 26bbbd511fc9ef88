package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"github.com/redis/go-redis/v9"
)

// tlsFiles are the files of -tls-ca, -tls-cert and -tls-key.
type tlsFiles struct {
	ca, cert, key string
}

// apply sets the CA (the roots that verify the server) and the client
// certificate on every rediss:// node of opts; both systems' clients copy
// the options. It is an error to give a certificate without its key or
// the reverse, the files with no rediss:// URL, -tls-ca with
// ?skip_verify=true, or a file that holds no PEM certificate or key.
func (f tlsFiles) apply(opts []*redis.Options) error {
	if f == (tlsFiles{}) {
		return nil
	}
	if (f.cert == "") != (f.key == "") {
		return errors.New("-tls-cert and -tls-key: give both, the client certificate and its private key")
	}
	var secure []*redis.Options
	for _, o := range opts {
		if o.TLSConfig != nil && f.ca != "" && o.TLSConfig.InsecureSkipVerify {
			return fmt.Errorf("-tls-ca with ?skip_verify=true on %s: the CA would verify nothing; give one of them", nodeName(o))
		} else if o.TLSConfig != nil {
			secure = append(secure, o)
		}
	}
	if secure == nil {
		return errors.New("-tls-ca, -tls-cert and -tls-key: no rediss:// URL in -nodes to apply them to")
	}
	var pool *x509.CertPool
	if f.ca != "" {
		pem, err := os.ReadFile(f.ca)
		if err != nil {
			return fmt.Errorf("-tls-ca: %v", err)
		}
		if pool = x509.NewCertPool(); !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("-tls-ca %s: no PEM certificate in it", f.ca)
		}
	}
	var certs []tls.Certificate
	if f.cert != "" {
		pair, err := tls.LoadX509KeyPair(f.cert, f.key)
		if err != nil {
			return fmt.Errorf("-tls-cert %s, -tls-key %s: %s", f.cert, f.key, firstLine(err.Error()))
		}
		certs = []tls.Certificate{pair}
	}
	for _, o := range secure {
		o.TLSConfig = o.TLSConfig.Clone()
		if pool != nil {
			o.TLSConfig.RootCAs = pool
		}
		o.TLSConfig.Certificates = certs
	}
	return nil
}
