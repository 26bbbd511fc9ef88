package hybrid

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
)

// TestAddrsURL: Config.Addrs takes a redis:// URL with a password and a
// database; the node is named by host:port/db, never by the credentials,
// and its keys go to that database.
func TestAddrsURL(t *testing.T) {
	srv := redistest.Start(t, redistest.WithPassword("s3cret"))
	ctx := context.Background()
	lim, err := New(Config{Addrs: []string{"redis://:s3cret@" + srv.Addr() + "/3"}, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer lim.Close()
	r, err := lim.Allow(ctx, "user:1", PerMinute(5))
	if err != nil || !r.Allowed || r.Source != SourceRemote {
		t.Fatalf("Allow = %+v, %v; want allowed by Redis", r, err)
	}
	st := lim.Stats()
	if name := st.Nodes[0].Name; name != srv.Addr()+"/3" || strings.Contains(name, "s3cret") {
		t.Errorf("node named %q, want %s/3", name, srv.Addr())
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), Password: "s3cret", DB: 3})
	defer rdb.Close()
	if n, err := rdb.DBSize(ctx).Result(); err != nil || n != 1 {
		t.Errorf("database 3 holds %d keys (%v), want the limit's one", n, err)
	}
	if _, err := New(Config{Addrs: []string{"10.0.0.1"}}); err == nil {
		t.Error("New with an address without a port = nil error")
	}
}

// TestRingRefused: a *redis.Ring node is refused with an error that says
// what to do instead.
func TestRingRefused(t *testing.T) {
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1", "b": "127.0.0.1:2"}})
	defer ring.Close()
	_, err := New(Config{Nodes: []Node{{Name: "ring", Client: ring}}})
	if !errors.Is(err, ErrInvalidNode) || !strings.Contains(err.Error(), "pass each of its shards as a node") {
		t.Errorf("New with a Ring = %v; want ErrInvalidNode saying to pass the shards as nodes", err)
	}
}
