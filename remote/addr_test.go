package remote

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestParseAddr(t *testing.T) {
	for _, tc := range []struct {
		in, name, addr, user, pass string
		db                         int
		tls                        bool
	}{
		{in: "10.0.0.1:6379", name: "10.0.0.1:6379", addr: "10.0.0.1:6379"},
		{in: "redis://10.0.0.1:6380", name: "10.0.0.1:6380", addr: "10.0.0.1:6380"},
		{in: "redis://limiter:s3cret@10.0.0.1:6379/2", name: "10.0.0.1:6379/2", addr: "10.0.0.1:6379", user: "limiter", pass: "s3cret", db: 2},
		{in: "rediss://:pw@cache.example.com:6380", name: "cache.example.com:6380", addr: "cache.example.com:6380", pass: "pw", tls: true},
	} {
		o, name, err := ParseAddr(tc.in)
		if err != nil {
			t.Errorf("ParseAddr(%q): %v", tc.in, err)
			continue
		}
		if name != tc.name || o.Addr != tc.addr || o.Username != tc.user || o.Password != tc.pass || o.DB != tc.db || (o.TLSConfig != nil) != tc.tls {
			t.Errorf("ParseAddr(%q) = %q, %+v", tc.in, name, o)
		}
	}
	for _, in := range []string{"10.0.0.1", "http://10.0.0.1:6379", "redis://u:topsecret@[bad"} {
		_, _, err := ParseAddr(in)
		if err == nil {
			t.Errorf("ParseAddr(%q) = nil error", in)
		} else if strings.Contains(err.Error(), "topsecret") {
			t.Errorf("ParseAddr(%q) error %q shows the password", in, err)
		}
	}
}

func TestBoundClusterAndFailoverOptions(t *testing.T) {
	c := BoundClusterOptions(&redis.ClusterOptions{Addrs: []string{"a:1"}, ReadTimeout: time.Second, PoolSize: 7})
	if c.MaxRetries != -1 || c.MaxRedirects != -1 || !c.ContextTimeoutEnabled || c.ReadTimeout != DefaultReadTimeout || c.DialerRetries != 1 ||
		c.ClusterStateReloadInterval != DefaultClusterStateReload || c.PoolSize != 7 || c.Addrs[0] != "a:1" {
		t.Errorf("BoundClusterOptions = %+v", c)
	}
	f := BoundFailoverOptions(&redis.FailoverOptions{MasterName: "m", SentinelAddrs: []string{"s:1"}, DialTimeout: time.Minute, Password: "p"})
	if f.MaxRetries != -1 || !f.ContextTimeoutEnabled || f.DialTimeout != DefaultDialTimeout || f.MasterName != "m" || f.Password != "p" {
		t.Errorf("BoundFailoverOptions = %+v", f)
	}
}
