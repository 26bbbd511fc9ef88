package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
)

// TestTLSFlags runs bench on a redis-server that speaks TLS only with a
// certificate from a private CA and requires a client certificate from
// it (--tls-auth-clients yes): with -tls-ca, -tls-cert and -tls-key both
// systems decide on it; without the CA the server is not trusted, and
// without the client certificate the server refuses bench, each an error
// (exit 1, not a usage error). Bounded: three runs of 150ms plus the
// startup, a few seconds.
func TestTLSFlags(t *testing.T) {
	redisOnly(t)
	f := redistest.PrivateCA(t, t.TempDir())
	_, addr := redistest.StartTLS(t, f, true)
	url := "rediss://" + addr

	base := []string{"-nodes", url, "-workload", "hot", "-duration", "150ms", "-concurrency", "4", "-instances", "2", "-json"}
	var stdout, stderr bytes.Buffer
	args := append(base, "-tls-ca", f.CA, "-tls-cert", f.ClientCert, "-tls-key", f.ClientKey)
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
		{"no client certificate", append(base, "-tls-ca", f.CA)},
		{"server not trusted", append(base, "-tls-cert", f.ClientCert, "-tls-key", f.ClientKey)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := run(t.Context(), tt.args, &bytes.Buffer{}, &bytes.Buffer{})
			if err == nil || errors.Is(err, errUsage) || !strings.Contains(err.Error(), addr) {
				t.Errorf("run(%q) = %v, want an error naming the node (not a usage error)", tt.args, err)
			}
		})
	}
}
