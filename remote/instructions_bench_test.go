package remote

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
	"github.com/hybridlimit/hybridlimit/limit"
)

// BenchmarkScriptInstructions counts the instructions redis-server runs per
// request, under valgrind's callgrind: a count, unlike a time, is the same
// from run to run on a shared, noisy machine. Each case starts a server
// under callgrind, warms it up (the library loaded, the keys written), then
// counts only the measured calls, from the command's arrival to its reply
// (user space: the kernel's share of a round trip is not counted). Cold
// keys (uniform over 100,000) within PerMinute(1,000,000), or within 100/min
// and 1000/hour, and PerMinute(1,000,000) under the other algorithms but
// the log (which, with no take path of their own, go through the views
// that common.lua builds); redis_rate's allowN script beside them. Floors beside
// those, 64 keys a call, with no limiter's arithmetic: a GET and a SET … PX
// per key, the commands each request's state costs now, and one HMGET, one
// HSET and one PEXPIRE for all 64 as fields of one hash (a layout where
// state expires with its hash, not per key), and one HMGET and one HSET a
// request for two states as fields of the client's own bucket's hash (the
// layout's cost where clients are scattered). The revisited cases ask
// again for the keys the warm-up wrote: a client whose state is there. It
// needs valgrind (apt-get install valgrind) and takes about two minutes:
//
//	go test -run '^$' -bench ScriptInstructions -benchtime 1x ./remote/
func BenchmarkScriptInstructions(b *testing.B) {
	if _, err := exec.LookPath("valgrind"); err != nil {
		b.Skip("valgrind not installed")
	}
	one := []limit.Limit{limit.PerMinute(1_000_000)}
	two := []limit.Limit{limit.PerMinute(100), limit.PerHour(1000)}
	oneOf := func(a limit.Algorithm) []limit.Limit {
		l := limit.PerMinute(1_000_000)
		l.Algorithm = a
		return []limit.Limit{l}
	}
	for _, c := range []struct {
		name     string
		perCall  int
		calls    int
		limits   []limit.Limit
		fn       bool // the library, else scripts
		redisRat bool
		floor    string // a floor's script, KEYS the requests' keys (or the hash's, ARGV its fields)
		hash     bool   // the floor's keys are fields of one hash
		revisit  int    // keys cycle over this many (those the warm-up wrote), else over 100,000
		compact  bool   // the compact layout, its hashes about as full as KeysPerHash (compactKeys)
	}{
		{"hybridlimit/functions/one-token-bucket/requests-per-call=1", 1, 500, one, true, false, "", false, 0, false},
		{"hybridlimit/functions/one-token-bucket/requests-per-call=64", 64, 100, one, true, false, "", false, 0, false},
		{"hybridlimit/functions/two-token-buckets/requests-per-call=64", 64, 100, two, true, false, "", false, 0, false},
		{"hybridlimit/functions/one-token-bucket/requests-per-call=64/revisited", 64, 100, one, true, false, "", false, 1280, false},
		{"hybridlimit/functions/two-token-buckets/requests-per-call=64/revisited", 64, 100, two, true, false, "", false, 1280, false},
		{"hybridlimit/functions/one-leaky-bucket/requests-per-call=64", 64, 100, oneOf(limit.LeakyBucket), true, false, "", false, 0, false},
		{"hybridlimit/functions/one-fixed-window/requests-per-call=64", 64, 100, oneOf(limit.FixedWindow), true, false, "", false, 0, false},
		{"hybridlimit/functions/one-sliding-window-counter/requests-per-call=64", 64, 100, oneOf(limit.SlidingWindowCounter), true, false, "", false, 0, false},
		{"hybridlimit/compact/functions/one-token-bucket/requests-per-call=64", 64, 100, one, true, false, "", false, 0, true},
		{"hybridlimit/compact/functions/two-token-buckets/requests-per-call=64", 64, 100, two, true, false, "", false, 0, true},
		{"hybridlimit/compact/functions/one-token-bucket/requests-per-call=64/revisited", 64, 100, one, true, false, "", false, 1280, true},
		{"hybridlimit/compact/functions/two-token-buckets/requests-per-call=64/revisited", 64, 100, two, true, false, "", false, 1280, true},
		{"hybridlimit/scripts/one-token-bucket/requests-per-call=1", 1, 500, one, false, false, "", false, 0, false},
		{"hybridlimit/scripts/one-token-bucket/requests-per-call=64", 64, 100, one, false, false, "", false, 0, false},
		{"redis_rate/one-token-bucket/requests-per-call=1", 1, 500, one, false, true, "", false, 0, false},
		{"floor/get-set-px/requests-per-call=64", 64, 100, nil, false, false, floorGetSet, false, 0, false},
		{"floor/hash-fields/requests-per-call=64", 64, 100, nil, false, false, floorHash, true, 0, false},
		{"floor/two-fields-of-the-clients-hash/requests-per-call=64", 64, 100, nil, false, false, floorClientFields, false, 0, false},
	} {
		b.Run(c.name, func(b *testing.B) {
			dir := b.TempDir()
			srv, rdb := callgrindServer(b, dir)
			ctx := context.Background()
			var call func(k int) error
			if c.floor != "" {
				sc := redis.NewScript(c.floor)
				keys := make([]string, c.perCall)
				call = func(k int) error {
					for i := range keys {
						keys[i] = "user:" + strconv.Itoa((k*c.perCall+i)%100_000)
					}
					if c.floor == floorClientFields { // a hash per bucket of 262,144
						hashes := make([]string, len(keys))
						args := make([]any, 0, 2*len(keys))
						for i, u := range keys {
							hashes[i] = "floor:{" + strconv.Itoa(((k*c.perCall+i)*7919)%262_144) + "}"
							args = append(args, u+"}m", u+"}h")
						}
						return sc.Run(ctx, rdb, hashes, args...).Err()
					}
					if c.hash {
						args := make([]any, len(keys))
						for i, f := range keys {
							args[i] = f
						}
						return sc.Run(ctx, rdb, []string{"floor:h"}, args...).Err()
					}
					return sc.Run(ctx, rdb, keys).Err()
				}
			} else if c.redisRat {
				rl := redis_rate.NewLimiter(rdb)
				lim := rateLimit(c.limits[0])
				call = func(k int) error {
					_, err := rl.Allow(ctx, "user:"+strconv.Itoa(k%100_000), lim)
					return err
				}
			} else {
				var l Layout
				if c.compact {
					l = Layout{Compact: true, Keys: compactKeys(c.revisit, 20*c.perCall, c.calls*c.perCall)}
				}
				s, err := New(rdb, Config{Layout: l})
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Load(ctx); err != nil {
					b.Fatal(err)
				}
				s.fn.Store(c.fn)
				reqs, out := make([]Request, c.perCall), make([]Result, c.perCall)
				space := 100_000
				if c.revisit > 0 {
					space = c.revisit
				}
				call = func(k int) error {
					for i := range reqs {
						reqs[i], _ = NewDecision("user:"+strconv.Itoa((k*c.perCall+i)%space), 1, c.limits...)
					}
					return s.DecideMany(ctx, reqs, out)
				}
			}
			for k := range 20 { // warm: the code loaded, keys written
				if err := call(k); err != nil {
					b.Fatal(err)
				}
			}
			control(b, srv, "-i", "on")
			for k := range c.calls {
				if err := call(20 + k); err != nil {
					b.Fatal(err)
				}
			}
			control(b, srv, "-i", "off")
			control(b, srv, "-d")
			b.ReportMetric(float64(callgrindTotal(b, dir))/float64(c.calls*c.perCall), "instructions/request")
		})
	}
}

// compactKeys is the Layout.Keys of a compact case whose hashes hold
// about KeysPerHash keys on average while it is measured: the keys it
// revisits, or, for new keys, those the warm-up and the measured calls
// write (their hashes fill from a sixth to about 1.6 times KeysPerHash).
func compactKeys(revisit, warm, measured int) int {
	if revisit > 0 {
		return revisit
	}
	return (warm + measured) * 5 / 8
}

// floorGetSet reads and writes each key's state as a request of a token
// bucket does (GET, then SET … PX), with no arithmetic.
const floorGetSet = `
local n = 0
for i = 1, #KEYS do
  local v = redis.call('GET', KEYS[i])
  n = n + 1
  redis.call('SET', KEYS[i], tostring((tonumber(v) or 0) + 1), 'PX', 60000)
end
return n`

// floorHash reads and writes the same states as fields of one hash: one
// HMGET, one HSET and one PEXPIRE for the call.
const floorHash = `
local vs = redis.call('HMGET', KEYS[1], unpack(ARGV))
local kv = {}
for i = 1, #ARGV do
  kv[2 * i - 1] = ARGV[i]
  kv[2 * i] = tostring((tonumber(vs[i]) or 0) + 1)
end
redis.call('HSET', KEYS[1], unpack(kv))
redis.call('PEXPIRE', KEYS[1], 60000)
return #ARGV`

// floorClientFields reads and writes two states of each request's client
// (a minute's and an hour's) as two fields of its bucket's hash, a hash
// per request: one HMGET and one HSET a request, where keys of their own
// take two GETs and two SETs (floorGetSet, twice).
const floorClientFields = `
for i = 1, #KEYS do
  local m, h = ARGV[2 * i - 1], ARGV[2 * i]
  local vs = redis.call('HMGET', KEYS[i], m, h)
  redis.call('HSET', KEYS[i], m, (tonumber(vs[1]) or 0) + 1, h, (tonumber(vs[2]) or 0) + 1)
end
return #KEYS`

// rateLimit is l as redis_rate takes it.
func rateLimit(l limit.Limit) redis_rate.Limit {
	return redis_rate.Limit{Rate: int(l.Rate), Burst: int(l.Capacity()), Period: l.Period}
}

// callgrindServer starts redis-server under callgrind, counting nothing
// until told, its output in dir, and a client of it.
func callgrindServer(b *testing.B, dir string) (*redistest.Server, *redis.Client) {
	b.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		b.Skip("redis-server not installed")
	}
	wrapper := filepath.Join(dir, "redis-server")
	script := "#!/bin/sh\nexec valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=" + filepath.Join(dir, "cg.%p") + " " + bin + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		b.Fatal(err)
	}
	b.Setenv("REDIS_SERVER_BIN", wrapper)
	srv := redistest.Start(b)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ReadTimeout: time.Minute, WriteTimeout: time.Minute, PoolSize: 1})
	b.Cleanup(func() { rdb.Close() })
	return srv, rdb
}

// control sends callgrind_control args to the server's valgrind, then waits
// for it to take them: valgrind reads its commands when the server next
// runs, at the latest at its next timer event (hz 10).
func control(b *testing.B, srv *redistest.Server, args ...string) {
	b.Helper()
	pid := serverPID(b, srv)
	if out, err := exec.Command("callgrind_control", append(args, pid)...).CombinedOutput(); err != nil {
		b.Fatalf("callgrind_control %v: %v: %s", args, err, out)
	}
	time.Sleep(300 * time.Millisecond)
}

// serverPID is the process id of the server, from INFO server.
func serverPID(b *testing.B, srv *redistest.Server) string {
	b.Helper()
	info, err := srv.Client(b).Info(context.Background(), "server").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "process_id:"); ok {
			return v
		}
	}
	b.Fatal("INFO server has no process_id")
	return ""
}

// callgrindTotal sums the instruction totals of the dumps in dir.
func callgrindTotal(b *testing.B, dir string) int64 {
	b.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "cg.*"))
	var total int64
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			b.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "totals: "); ok {
				n, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
				total += n
			}
		}
		fh.Close()
	}
	if total == 0 {
		b.Fatalf("no callgrind totals in %s", dir)
	}
	return total
}
