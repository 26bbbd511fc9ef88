package remote

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/hybridlimit/hybridlimit/limit"
)

var memKeys = flag.Int("memkeys", 100_000, "keys per algorithm in TestRedisBytesPerKey (the figures in docs/deployment.md use 1000000)")

// TestRedisBytesPerKey prints the Redis memory one key costs for each
// algorithm (INFO used_memory delta over -memkeys keys, one request each),
// beside go-redis/redis_rate on the same server. Keys look like "u:0000042".
func TestRedisBytesPerKey(t *testing.T) {
	if testing.Short() {
		t.Skip("writes -memkeys keys per algorithm")
	}
	s, _, rdb := newRealProduction(t)
	ctx := context.Background()
	n := *memKeys
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("u:%07d", i)
	}
	// Long periods so that no key expires while the test writes: a bucket
	// key lives until the bucket is full again, a window key until its
	// window (or the next) ends.
	day := 24 * time.Hour
	cases := []struct {
		name string
		l    limit.Limit
	}{
		{"TokenBucket", limit.Limit{Rate: 1000, Period: day}},
		{"LeakyBucket", limit.Limit{Algorithm: limit.LeakyBucket, Rate: 1000, Period: day}},
		{"FixedWindow", limit.Limit{Algorithm: limit.FixedWindow, Rate: 1000, Period: 7 * day}},
		{"SlidingWindowLog", limit.Limit{Algorithm: limit.SlidingWindowLog, Rate: 1000, Period: day}},
		{"SlidingWindowCounter", limit.Limit{Algorithm: limit.SlidingWindowCounter, Rate: 1000, Period: day}},
	}
	perKey := map[string]float64{}
	// The first pass pays once for things that are not per key (script
	// compilation, connection buffers): measure it twice, keep the second.
	cases = append(cases[:1:1], cases...)
	for _, c := range cases {
		flush(t, rdb)
		before := usedMemory(t, rdb)
		const batch = 64
		reqs := make([]Request, batch)
		out := make([]Result, batch)
		for i := 0; i < n; i += batch {
			m := min(batch, n-i)
			for j := 0; j < m; j++ {
				reqs[j] = req(keys[i+j], 1, []limit.Limit{c.l})
			}
			if err := s.DecideMany(ctx, reqs[:m], out[:m]); err != nil {
				t.Fatal(err)
			}
		}
		perKey[c.name] = float64(usedMemory(t, rdb)-before) / float64(n)
		if got := rdb.DBSize(ctx).Val(); got != int64(n) {
			t.Fatalf("%s: DBSIZE = %d, want %d", c.name, got, n)
		}
	}
	// Redis's floor: the same key names, each holding a small integer with a
	// TTL, the least a key of its own can cost.
	flush(t, rdb)
	before := usedMemory(t, rdb)
	for i := 0; i < n; i += 1024 {
		_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for j := i; j < min(i+1024, n); j++ {
				p.Set(ctx, s.Key(keys[j], cases[0].l), 123456789012, day)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	perKey["floor"] = float64(usedMemory(t, rdb)-before) / float64(n)

	// redis_rate, the per-request design, on the same server.
	flush(t, rdb)
	before = usedMemory(t, rdb)
	rl := redis_rate.Limit{Rate: 1000, Burst: 1000, Period: day}
	lim := redis_rate.NewLimiter(rdb)
	eachClient(t, n, func(j int) error {
		_, err := lim.Allow(ctx, keys[j], rl)
		return err
	})
	if got := rdb.DBSize(ctx).Val(); got != int64(n) {
		t.Fatalf("redis_rate: DBSIZE = %d, want %d", got, n)
	}
	perKey["redis_rate"] = float64(usedMemory(t, rdb)-before) / float64(n)

	// The seed's rules, 100/min and 1000/hour: two keys per client, each
	// written at its first request. A key lives until its bucket is full
	// again, so each client spends its whole minute (100 units: both keys
	// live at least a minute, longer than this test). redis_rate takes one
	// call and one key per limit.
	seed := []limit.Limit{limit.PerMinute(100), limit.PerHour(1000)}
	flush(t, rdb)
	before = usedMemory(t, rdb)
	for i := 0; i < n; i += 64 {
		m := min(64, n-i)
		reqs, out := make([]Request, m), make([]Result, m)
		for j := range m {
			reqs[j] = req(keys[i+j], 100, seed)
		}
		if err := s.DecideMany(ctx, reqs, out); err != nil {
			t.Fatal(err)
		}
	}
	if got := rdb.DBSize(ctx).Val(); got != 2*int64(n) {
		t.Fatalf("seed rules: DBSIZE = %d, want %d", got, 2*n)
	}
	perClient := float64(usedMemory(t, rdb)-before) / float64(n)
	flush(t, rdb)
	before = usedMemory(t, rdb)
	eachClient(t, n, func(j int) error {
		for k, l := range seed {
			if _, err := lim.AllowN(ctx, keys[j]+":"+strconv.Itoa(k), redis_rate.Limit{Rate: int(l.Rate), Burst: int(l.Rate), Period: l.Period}, 100); err != nil {
				return err
			}
		}
		return nil
	})
	// Per client as counted: redis_rate is one call per key, and at a
	// million clients its minute keys may start to expire before the
	// last is written.
	live := rdb.DBSize(ctx).Val()
	perClientRR := float64(usedMemory(t, rdb)-before) / (float64(live) / 2)

	for _, name := range []string{"TokenBucket", "LeakyBucket", "FixedWindow", "SlidingWindowLog", "SlidingWindowCounter", "floor", "redis_rate"} {
		t.Logf("%-21s %6.1f B/key (%d keys)", name, perKey[name], n)
	}
	t.Logf("100/min+1000/hour     %6.1f B/client, redis_rate %.1f B/client (%d clients, two keys each; redis_rate's keys live at the end: %d)", perClient, perClientRR, n, live)
	// The token bucket is one int-encoded value: Redis's floor for a key of
	// its own with a TTL (129 B at a million keys; hash tables are emptier,
	// so dearer per key, at fewer).
	if perKey["TokenBucket"] > perKey["floor"]+1 {
		t.Errorf("TokenBucket uses %.1f B/key, want at most the floor %.1f + 1", perKey["TokenBucket"], perKey["floor"])
	}
	if n >= 1_000_000 && perKey["TokenBucket"] > 130 {
		t.Errorf("TokenBucket uses %.1f B/key at %d keys, want <= 130", perKey["TokenBucket"], n)
	}
	if perKey["TokenBucket"] >= perKey["redis_rate"] {
		t.Errorf("TokenBucket uses %.1f B/key, not less than redis_rate's %.1f", perKey["TokenBucket"], perKey["redis_rate"])
	}
}

func flush(t *testing.T, rdb *redis.Client) {
	t.Helper()
	ctx := context.Background()
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	// Let the lazy-free thread and the allocator settle.
	time.Sleep(100 * time.Millisecond)
}

func usedMemory(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no used_memory in INFO memory")
	return 0
}

// eachClient runs fn for the clients 0 to n-1 from 32 goroutines, as many
// callers would, and fails the test at the first error.
func eachClient(t *testing.T, n int, fn func(j int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := w; j < n; j += 32 {
				if err := fn(j); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

var memClients = flag.Int("memclients", 100_000, "clients in TestRedisBytesPerClient (the figures in docs/capacity.md use 1000000 and 10000000)")

// TestRedisBytesPerClient prints the Redis memory a client of the seed's
// two limits, 100/min and 1000/hour, costs in each layout: INFO
// used_memory after minus before writing -memclients clients, one request
// of 100 units each (so that a key of its own lives a minute at least), in
// batches of 64, the compact layout sized for them (Layout.Keys). Client
// ids are "user:%07d", 12 bytes. The compact layout
// must cost at most 100 B a client from a million clients on, and at most
// 64 B from ten million. Beside it, "log": a SlidingWindowLog of 100/min,
// one unit each, which keeps a sorted set of its own in both layouts.
func TestRedisBytesPerClient(t *testing.T) {
	if testing.Short() {
		t.Skip("writes -memclients clients per layout")
	}
	n := *memClients
	for _, c := range []struct {
		name   string
		limits []limit.Limit
		cost   int64
	}{
		{"seed", []limit.Limit{limit.PerMinute(100), limit.PerHour(1000)}, 100},
		{"log", []limit.Limit{{Algorithm: limit.SlidingWindowLog, Rate: 100, Period: time.Minute}}, 1},
	} {
		t.Run(c.name, func(t *testing.T) { bytesPerClient(t, n, c.name == "seed", c.limits, c.cost) })
	}
}

// bytesPerClient is TestRedisBytesPerClient for one set of limits in both
// layouts; seed: the compact layout's bounds apply.
func bytesPerClient(t *testing.T, n int, seed bool, limits []limit.Limit, cost int64) {
	for _, lt := range []struct {
		name string
		l    Layout
	}{{"keys", Layout{}}, {"compact", Layout{Compact: true, Keys: n}}} {
		t.Run(lt.name, func(t *testing.T) {
			s, _, rdb := newRealProductionIn(t, lt.l)
			ctx := context.Background()
			// Redis's default, which the packaged redis-server raises to
			// 512: a hash of more fields is no longer a listpack.
			if err := rdb.ConfigSet(ctx, "hash-max-listpack-entries", "128").Err(); err != nil {
				t.Fatal(err)
			}
			// A first pass pays for what is not per client (the code,
			// connection buffers): 64 clients of other ids, then FLUSHALL.
			reqs, out := make([]Request, 64), make([]Result, 64)
			for j := range reqs {
				reqs[j] = req(fmt.Sprintf("warm:%d", j), cost, limits)
			}
			if err := s.DecideMany(ctx, reqs, out); err != nil {
				t.Fatal(err)
			}
			flush(t, rdb)
			before := usedMemory(t, rdb)
			start := time.Now()
			for i := 0; i < n; i += 64 {
				m := min(64, n-i)
				for j := range m {
					reqs[j] = req(fmt.Sprintf("user:%07d", i+j), cost, limits)
				}
				if err := s.DecideMany(ctx, reqs[:m], out[:m]); err != nil {
					t.Fatal(err)
				}
				for _, r := range out[:m] {
					if r.Err != nil || !r.Decision.Allowed {
						t.Fatalf("a first request of a client: %+v", r)
					}
				}
			}
			perClient := float64(usedMemory(t, rdb)-before) / float64(n)
			keys := rdb.DBSize(ctx).Val()
			t.Logf("%s: %.1f B/client (%d clients, %d Redis keys, written in %v)", t.Name(), perClient, n, keys, time.Since(start).Round(time.Millisecond))
			switch {
			case !lt.l.Compact || !seed:
			case n >= 10_000_000 && perClient > 64:
				t.Errorf("compact: %.1f B/client at %d clients, want at most 64", perClient, n)
			case n >= 1_000_000 && perClient > 100:
				t.Errorf("compact: %.1f B/client at %d clients, want at most 100", perClient, n)
			}
		})
	}
}
