package remote

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
	"github.com/hybridlimit/hybridlimit/limit"
)

// scriptCounts reads one server's INFO commandstats for FCALL and EVALSHA:
// the calls that ran without an error, those that failed (a missing
// function is one), those rejected before running (MOVED, ASK, TRYAGAIN,
// CLUSTERDOWN), and the ASKING commands.
type scriptCounts struct{ ran, failed, rejected, asking int64 }

func countScripts(t *testing.T, s *redistest.Server) scriptCounts {
	t.Helper()
	info, err := s.Client(t).Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	var c scriptCounts
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		f := map[string]int64{}
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			n, _ := strconv.ParseFloat(v, 64)
			f[k] = int64(n)
		}
		switch name {
		case "cmdstat_fcall", "cmdstat_evalsha":
			c.ran += f["calls"] - f["failed_calls"]
			c.failed += f["failed_calls"]
			c.rejected += f["rejected_calls"]
		case "cmdstat_asking":
			c.asking += f["calls"]
		}
	}
	return c
}

// defaultClusterStore is a Store on c, given a cluster client of go-redis's
// defaults, with its code and slot map loaded; both close at the test's end.
func defaultClusterStore(t *testing.T, c *redistest.Cluster) *Store {
	t.Helper()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { rdb.Close() })
	s, err := New(rdb, Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

// keyOfMaster is a user key whose slot master i of c serves.
func keyOfMaster(t *testing.T, c *redistest.Cluster, i int) string {
	t.Helper()
	for n := 0; ; n++ {
		if k := "k" + strconv.Itoa(n); c.MasterOf(t, "{"+k+"}") == i {
			return k
		}
	}
}

// TestClusterFollowsAMigration: on a real 2-master cluster, a slot is
// migrated by hand, step by step, as redis-cli does it, with a client of
// go-redis's defaults given to the Store. A request whose two keys the
// migration has split meets TRYAGAIN and waits; once both keys have moved
// it meets ASK and runs on the importing master (whose function library
// was flushed: it is loaded there on the way); once the slot is handed
// over it meets MOVED, and the Store's slot map names the new master with
// no reload. The budget carries the state across (the remaining count
// goes on from where it was), and INFO commandstats shows each request ran
// once.
func TestClusterFollowsAMigration(t *testing.T) {
	c := redistest.StartCluster(t, 2, 0)
	s := defaultClusterStore(t, c)
	ctx := context.Background()
	limits := []limit.Limit{limit.PerMinute(100), limit.PerHour(1000)}
	key := keyOfMaster(t, c, 0)
	src, dst := c.Masters[0], c.Masters[1]
	slot := KeySlot(s.Key(key, limits[0]))
	if want, err := src.Client(t).ClusterKeySlot(ctx, s.Key(key, limits[1])).Result(); err != nil || int64(slot) != want {
		t.Fatalf("KeySlot = %d, CLUSTER KEYSLOT = %d, %v", slot, want, err)
	}
	decide := func(ctx context.Context, want int64) {
		t.Helper()
		r, err := s.Decide(ctx, req(key, 1, limits))
		if err != nil || !r.Allowed || r.Remaining != want {
			t.Fatalf("Decide = %+v, %v; want allowed with %d left", r, err, want)
		}
	}
	decide(ctx, 99) // on src

	srcID, err := c.ID(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	dstID, err := c.ID(ctx, dst)
	if err != nil {
		t.Fatal(err)
	}
	do := func(srv *redistest.Server, args ...any) {
		t.Helper()
		if err := srv.Client(t).Do(ctx, args...).Err(); err != nil {
			t.Fatalf("%v on %s: %v", args, srv.Addr(), err)
		}
	}
	do(dst, "FUNCTION", "FLUSH")
	do(dst, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID)
	do(src, "CLUSTER", "SETSLOT", slot, "MIGRATING", dstID)
	migrate := func(k string) {
		do(src, "MIGRATE", "127.0.0.1", dst.Port(), k, 0, 5000)
	}
	migrate(s.Key(key, limits[0]))
	before := [2]scriptCounts{countScripts(t, src), countScripts(t, dst)}

	// Split: src holds one key, dst the other. The request waits out
	// TRYAGAIN until the second key follows.
	done := make(chan struct{})
	go func() {
		defer close(done)
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		decide(cctx, 98)
	}()
	time.Sleep(30 * time.Millisecond)
	migrate(s.Key(key, limits[1]))
	<-done
	do(dst, "CLUSTER", "SETSLOT", slot, "NODE", dstID)
	do(src, "CLUSTER", "SETSLOT", slot, "NODE", dstID)
	decide(ctx, 97) // src answers MOVED
	if addr, err := s.Shard(key); err != nil || addr != dst.Addr() {
		t.Errorf("Shard after MOVED = %q, %v; want %s", addr, err, dst.Addr())
	}
	decide(ctx, 96) // straight to dst

	after := [2]scriptCounts{countScripts(t, src), countScripts(t, dst)}
	d := func(i int) scriptCounts {
		return scriptCounts{after[i].ran - before[i].ran, after[i].failed - before[i].failed, after[i].rejected - before[i].rejected, after[i].asking - before[i].asking}
	}
	t.Logf("src %+v, dst %+v", d(0), d(1))
	if d(0).ran != 0 || d(1).ran != 3 {
		t.Errorf("scripts run on src %d, on dst %d; want 0 and 3 (each request once)", d(0).ran, d(1).ran)
	}
	if d(0).rejected < 3 {
		t.Errorf("src rejected %d calls, want TRYAGAIN at least once, ASK and MOVED", d(0).rejected)
	}
	if d(1).asking < 1 || d(1).failed != 1 {
		t.Errorf("dst: %d ASKING, %d failed calls; want ASKING, and one call that found the library missing", d(1).asking, d(1).failed)
	}
}

// TestClusterTimeoutIsNotResent: a master that stops answering (SIGSTOP)
// times out a request at its deadline, and the request is not sent again,
// though the Store was given a client of go-redis's defaults (MaxRedirects
// 3, which go-redis spends on timeouts too, and 5 s reads): once the
// master resumes it has run the script once.
func TestClusterTimeoutIsNotResent(t *testing.T) {
	c := redistest.StartCluster(t, 3, 0, redistest.WithArgs("--cluster-require-full-coverage", "no"))
	s := defaultClusterStore(t, c)
	ctx := context.Background()
	key := keyOfMaster(t, c, 0)
	m := c.Masters[0]
	before := countScripts(t, m)
	if err := m.Pause(); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
	t0 := time.Now()
	_, err := s.Decide(cctx, req(key, 1, []limit.Limit{limit.PerMinute(100)}))
	took := time.Since(t0)
	cancel()
	if err := m.Resume(); err != nil {
		t.Fatal(err)
	}
	if err == nil || errors.Is(err, ErrCluster) {
		t.Errorf("Decide on a stopped master = %v, want a timeout", err)
	}
	if took > time.Second {
		t.Errorf("Decide on a stopped master took %v, want its 150ms budget", took)
	}
	time.Sleep(200 * time.Millisecond) // the master reads what was sent
	if after := countScripts(t, m); after.ran-before.ran > 1 {
		t.Errorf("the script ran %d times for one request", after.ran-before.ran)
	}
}

func TestRouteOf(t *testing.T) {
	for _, tc := range []struct {
		reply string
		want  routing
		addr  string
	}{
		{"MOVED 3999 127.0.0.1:6381", routeMoved, "127.0.0.1:6381"},
		{"ASK 3999 10.0.0.2:7000", routeAsk, "10.0.0.2:7000"},
		{"TRYAGAIN Multiple keys request during rehashing of slot", routeTryAgain, ""},
		{"CLUSTERDOWN The cluster is down", routeClusterDown, ""},
		{"CLUSTERDOWN Hash slot not served", routeClusterDown, ""},
		{"ERR something", routeNone, ""},
		{"MOVED 3999", routeNone, ""},
		{"NOSCRIPT No matching script", routeNone, ""},
	} {
		cmd := redis.NewCmd(context.Background())
		cmd.SetErr(redisError(tc.reply))
		got, addr := routeOf(cmd.Err())
		if got != tc.want || addr != tc.addr {
			t.Errorf("routeOf(%q) = %v, %q; want %v, %q", tc.reply, got, addr, tc.want, tc.addr)
		}
	}
	if r, _ := routeOf(context.DeadlineExceeded); r != routeNone {
		t.Errorf("routeOf(deadline) = %v, want none: a timeout is never resent", r)
	}
}

// redisError is an error reply as go-redis returns one.
type redisError string

func (e redisError) Error() string { return string(e) }
func (redisError) RedisError()     {}

func TestMemberAddr(t *testing.T) {
	for _, tc := range []struct{ addr, origin, want string }{
		{"127.0.0.1:7001", "127.0.0.1:7000", "127.0.0.1:7001"},
		{"127.0.0.1:7001", "10.0.0.5:7000", "10.0.0.5:7001"}, // a loopback name from a remote member
		{":7001", "10.0.0.5:7000", "10.0.0.5:7001"},          // a member that does not know its IP
		{"10.0.0.6:0", "10.0.0.5:7000", "10.0.0.6:7000"},     // a TLS-only member
		{"::1:7001", "[::1]:7000", "[::1]:7001"},             // MOVED's IPv6, unbracketed
		{"10.0.0.6:7001", "", "10.0.0.6:7001"},
	} {
		if got := memberAddr(tc.addr, tc.origin); got != tc.want {
			t.Errorf("memberAddr(%q, %q) = %q, want %q", tc.addr, tc.origin, got, tc.want)
		}
	}
}

// TestKeySlot: slots CLUSTER KEYSLOT gave on redis-server 7.0 (hash tags,
// empty ones, and CRC16/XMODEM's check value), then more keys against a
// real cluster member.
func TestKeySlot(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want int
	}{
		{"", 0},
		{"foo", 12182},
		{"bar", 5061},
		{"123456789", 12739}, // CRC16/XMODEM's check value 0x31C3, mod 16384
		{"{user1000}.following", 3443},
		{"{user1000}.followers", 3443},
		{"user1000", 3443},
		{"foo{}{bar}", 8363}, // an empty tag: the whole key is hashed
		{"foo{{bar}}zap", 4015},
		{"foo{bar}{zap}", 5061},
	} {
		if got := KeySlot(tc.key); got != tc.want {
			t.Errorf("KeySlot(%q) = %d, want %d", tc.key, got, tc.want)
		}
	}
	c := redistest.StartCluster(t, 1, 0)
	rdb := c.Masters[0].Client(t)
	for _, k := range []string{"a", "user:42", "{user}:x", "x{user}y", "{}", "{}user", "{{probe}:x", "a{b{c}d}", "}{x}", "rl:{%7Bk%7D}:tb:60"} {
		want, err := rdb.ClusterKeySlot(context.Background(), k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got := KeySlot(k); int64(got) != want {
			t.Errorf("KeySlot(%q) = %d, CLUSTER KEYSLOT = %d", k, got, want)
		}
	}
}

// TestClusterCaveats: the options of a user's client that routing cannot
// undo are reported, naming the option.
func TestClusterCaveats(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    redis.ClusterOptions
		want []string
	}{
		{"defaults", redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}}, nil},
		{"bound", *BoundClusterOptions(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}}), nil},
		{"static slots", redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}, ClusterSlots: func(context.Context) ([]redis.ClusterSlot, error) { return nil, nil }},
			[]string{"ClusterOptions.ClusterSlots"}},
		{"retrying members", redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}, NewClient: func(o *redis.Options) *redis.Client {
			o.MaxRetries, o.ContextTimeoutEnabled = 3, false
			return redis.NewClient(o)
		}}, []string{"ClusterOptions.NewClient", "ClusterOptions.NewClient"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rdb := redis.NewClusterClient(&tc.o)
			defer rdb.Close()
			s, err := New(rdb, Config{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var got []string
			for _, c := range s.Caveats() {
				got = append(got, c.Option)
				slog.Info("caveat", "option", c.Option, "problem", c.Problem, "fix", c.Fix)
				if c.Problem == "" || c.Fix == "" {
					t.Errorf("caveat %+v: no problem or no fix", c)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("Caveats = %v, want %v", got, tc.want)
			}
		})
	}
}
