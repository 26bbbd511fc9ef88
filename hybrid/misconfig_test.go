package hybrid

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
	"github.com/hybridlimit/hybridlimit/remote"
)

// minimalACL is the least a limiter's user needs: the scripts' commands on
// the prefix's keys. functionsACL adds what running the code as a function
// library takes (Redis 7), which costs Redis less per call.
// docs/deployment.md quotes them (TestACLInDocs); TestLeastPrivilegeACL
// keeps them true.
const (
	minimalACL   = "~rl:* +ping +evalsha +script|load +script|exists +time +get +set +del +pexpire +zadd +zcount +zrange +zrangebyscore +zrevrangebyscore +zrem +zremrangebyscore"
	functionsACL = minimalACL + " +fcall +function|load"
)

// aclServer starts a redis-server whose default user has password admin
// and adds user limiter, password pw, with the given rules.
func aclServer(t *testing.T, rules string) *redistest.Server {
	t.Helper()
	srv := redistest.Start(t, redistest.WithPassword("admin"))
	args := []any{"ACL", "SETUSER", "limiter", "reset", "on", ">pw"}
	for _, r := range strings.Fields(rules) {
		args = append(args, r)
	}
	if err := srv.Client(t).Do(context.Background(), args...).Err(); err != nil {
		t.Fatal(err)
	}
	return srv
}

// TestMisconfigurationIsAnError: New returns ErrMisconfigured, naming the
// node and the cause, for a missing or wrong password and for an ACL that
// lacks a command one script needs (found by running every script at
// startup), instead of starting in the failure mode.
func TestMisconfigurationIsAnError(t *testing.T) {
	full := aclServer(t, minimalACL)
	noZadd := aclServer(t, strings.Replace(minimalACL, " +zadd", "", 1))
	for _, tc := range []struct {
		name, addr, want string
	}{
		{"no password", "redis://" + full.Addr(), "NOAUTH"},
		{"wrong password", "redis://limiter:nope@" + full.Addr(), "WRONGPASS"},
		{"ACL without ZADD", "redis://limiter:pw@" + noZadd.Addr(), "decide.lua: ERR The user executing the script can't run this command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lim, err := New(Config{Addrs: []string{tc.addr}})
			if err == nil {
				lim.Close()
				t.Fatal("New = nil error")
			}
			if !errors.Is(err, ErrMisconfigured) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "pw@") {
				t.Errorf("New error = %v; want ErrMisconfigured with %s, naming the node without credentials", err, tc.want)
			}
		})
	}
}

// TestLeastPrivilegeACL: a user with minimalACL runs every algorithm, named
// limits and leases, all decided by Redis, by scripts; a user with
// functionsACL the same by the function library.
func TestLeastPrivilegeACL(t *testing.T) {
	for _, tc := range []struct {
		name, acl string
		functions bool
	}{{"scripts", minimalACL, false}, {"functions", functionsACL, true}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := aclServer(t, tc.acl)
			lim, err := New(Config{Addrs: []string{"redis://limiter:pw@" + srv.Addr()}, Timeout: 2 * time.Second, Lease: LeaseConfig{HotRate: 50}})
			if err != nil {
				t.Fatal(err)
			}
			defer lim.Close()
			ctx := context.Background()
			for _, alg := range []Algorithm{TokenBucket, LeakyBucket, FixedWindow, SlidingWindowLog, SlidingWindowCounter} {
				l := Limit{Algorithm: alg, Rate: 1000, Period: time.Second}
				named := Limit{Algorithm: alg, Rate: 1000, Period: time.Hour, Name: "n"}
				for i := range 300 {
					r, err := lim.AllowN(ctx, "acl:"+alg.String(), 1, l, named)
					if err != nil || r.Source == SourceFallback {
						t.Fatalf("%v #%d: %+v, %v; want decided by Redis", alg, i, r, err)
					}
				}
			}
			st := lim.Stats()
			if st.Undecided[ReasonConfig]+st.Undecided[ReasonServer] != 0 {
				t.Errorf("undecided %v", st.Undecided)
			}
			if got := st.Nodes[0].Functions; got != tc.functions {
				t.Errorf("NodeStats.Functions = %v, want %v", got, tc.functions)
			}
		})
	}
}

// TestACLInDocs: docs/deployment.md gives the ACL that TestLeastPrivilegeACL
// runs with, word for word.
func TestACLInDocs(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "deployment.md"))
	if err != nil {
		t.Fatal(err)
	}
	if line := "ACL SETUSER limiter on >password " + functionsACL; !strings.Contains(string(b), line+"\n") {
		t.Errorf("docs/deployment.md does not give the line\n%s", line)
	}
}

// TestConfigErrorAtRunTime: a password changed under a running Limiter is
// counted as ReasonConfig, not as a transport error.
func TestConfigErrorAtRunTime(t *testing.T) {
	srv := aclServer(t, minimalACL)
	lim, err := New(Config{Addrs: []string{"redis://limiter:pw@" + srv.Addr()}, Timeout: 2 * time.Second, Lease: LeaseConfig{Disable: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer lim.Close()
	ctx := context.Background()
	admin := srv.Client(t)
	if err := admin.Do(ctx, "ACL", "SETUSER", "limiter", "resetpass", ">other").Err(); err != nil {
		t.Fatal(err)
	}
	// Existing connections stay authenticated: drop them.
	if err := admin.Do(ctx, "CLIENT", "KILL", "USER", "limiter").Err(); err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	for range 5 {
		if r, err := lim.Allow(ctx, "k", PerSecond(10)); err != nil || r.Source != SourceFallback {
			t.Fatalf("Allow = %+v, %v; want the failure mode's answer", r, err)
		}
	}
	st := lim.Stats()
	if st.Undecided[ReasonConfig] == 0 || st.Undecided[ReasonTransport] != 0 {
		t.Errorf("undecided %v; want config errors, no transport errors", st.Undecided)
	}
	if remote.IsConfigError(errors.New("dial tcp: connection refused")) {
		t.Error("a refused connection classified as a config error")
	}
}
