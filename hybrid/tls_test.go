package hybrid

import (
	"context"
	"crypto/tls"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
	"github.com/hybridlimit/hybridlimit/remote"
)

// TestTLS: a node that speaks TLS with a certificate from a private CA
// works with a client that trusts the CA, and is a startup error
// (ErrMisconfigured, certificate verification) for one that does not.
func TestTLS(t *testing.T) {
	f := redistest.PrivateCA(t, t.TempDir())
	_, addr := redistest.StartTLS(t, f, false)

	rdb := remote.NewClient(&redis.Options{Addr: addr, TLSConfig: &tls.Config{RootCAs: f.Pool(), MinVersion: tls.VersionTLS12}})
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

	// The rediss:// URL's options, with room for a TLS handshake on a
	// loaded machine: under CI load the bounded dial (250 ms) timed out
	// twice, and a node that does not answer in time is unreachable (no
	// error), not misconfigured.
	o, _, err := remote.ParseAddr("rediss://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout = 5*time.Second, 5*time.Second, 5*time.Second
	o.DialerRetries = 1 // one handshake: go-redis's five, backed off, outlast the warm-up
	untrusting := redis.NewClient(o)
	defer untrusting.Close()
	lim, err = New(Config{Nodes: []Node{{Name: "untrusting", Client: untrusting}}, Timeout: 5 * time.Second})
	if err == nil {
		lim.Close()
		t.Fatal("New with a certificate the client does not trust = nil error")
	}
	if !errors.Is(err, ErrMisconfigured) || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("New error = %v; want ErrMisconfigured about the certificate", err)
	}
}
