package remote

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
)

// testClockKey holds the time, in microseconds, that scripts built by
// testClockScripts read instead of TIME. Real redis-server cannot be told
// what time it is, and the conformance vectors span days.
const testClockKey = "hybridlimit-test-clock"

// testClockScripts are the production scripts with two functions replaced:
// clock() reads testClockKey, and ttl_ms() (and tb_admit's copy of it) adds
// ten minutes, so that keys never expire in real time while the test's
// clock stands still. Everything else is byte for byte the production code.
func testClockScripts(t testing.TB, compact bool) *scriptSet {
	t.Helper()
	replace := func(src, old, new string) string {
		if !strings.Contains(src, old) {
			t.Fatalf("test clock: production script no longer contains %q", old)
		}
		return strings.Replace(src, old, new, 1)
	}
	return newScriptSet(compact, func(src string) string {
		src = replace(src, "  local t = rcall('TIME')\n  return tonumber(t[1]) * 1000000 + tonumber(t[2])\n",
			"  return tonumber(rcall('GET', '"+testClockKey+"'))\n")
		src = replace(src, "  return ms_arg(d + 1)\n", "  return ms_arg(d + 1 + 600000)\n")
		if strings.Contains(src, "local function tb_admit(") { // scripts without token_bucket.lua lack it
			src = replace(src, "'PX', ms_arg(ms + 1))", "'PX', ms_arg(ms + 1 + 600000))")
		}
		return src
	})
}

// clock moves the time a store's scripts see.
type clock interface {
	set(t testing.TB, now time.Time)
}

// miniClock drives miniredis: TIME via SetTime, TTLs via FastForward.
type miniClock struct {
	m    *miniredis.Miniredis
	last time.Time
}

func (c *miniClock) set(_ testing.TB, now time.Time) {
	if !c.last.IsZero() {
		c.m.FastForward(now.Sub(c.last))
	}
	c.m.SetTime(now)
	c.last = now
}

// keyClock writes the time into testClockKey of a real redis-server.
type keyClock struct{ rdb *redis.Client }

func (c keyClock) set(t testing.TB, now time.Time) {
	t.Helper()
	if err := c.rdb.Set(context.Background(), testClockKey, strconv.FormatInt(now.UnixMicro(), 10), 0).Err(); err != nil {
		t.Fatalf("set test clock: %v", err)
	}
}

// layouts are the two layouts the suites run in; the compact one with few
// buckets, so that the test's keys share hashes.
var layouts = []struct {
	name string
	l    Layout
}{{"keys", Layout{}}, {"compact", Layout{Compact: true, Keys: 10 * KeysPerHash}}}

// newMini returns a store on a fresh miniredis with its clock.
func newMini(t testing.TB) (*Store, *miniredis.Miniredis, *miniClock) {
	return newMiniIn(t, Layout{})
}

// newMiniIn is newMini in layout l.
func newMiniIn(t testing.TB, l Layout) (*Store, *miniredis.Miniredis, *miniClock) {
	t.Helper()
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), Protocol: 2})
	t.Cleanup(func() { rdb.Close() })
	s, err := New(rdb, Config{Layout: l})
	if err != nil {
		t.Fatal(err)
	}
	return s, m, &miniClock{m: m}
}

// newRealIn returns a store in layout l with test-clock scripts on a fresh
// redis-server.
func newRealIn(t testing.TB, l Layout) (*Store, *redistest.Server, keyClock) {
	t.Helper()
	s, srv, rdb := newRealProductionIn(t, l)
	s.scripts = testClockScripts(t, l.Compact)
	return s, srv, keyClock{rdb: rdb}
}

// realModes are the two forms the code runs in on redis-server: the
// function library (FCALL), which a Redis 7 node gets, and the scripts
// (EVALSHA), which a node without functions gets.
var realModes = []struct {
	name string
	fn   bool
}{{"functions", true}, {"scripts", false}}

// newRealMode is newRealIn with the default layout and the code run as the function library (fn) or
// as scripts.
func newRealMode(t testing.TB, fn bool) (*Store, *redistest.Server, keyClock) {
	return newRealModeIn(t, fn, Layout{})
}

// newRealModeIn is newRealMode in layout l.
func newRealModeIn(t testing.TB, fn bool, l Layout) (*Store, *redistest.Server, keyClock) {
	t.Helper()
	s, srv, c := newRealIn(t, l)
	s.fn.Store(fn)
	if fn {
		if err := s.Load(context.Background()); err != nil || !s.Functions() {
			t.Fatalf("Load() = %v, Functions() = %v; want the function library loaded", err, s.Functions())
		}
	}
	return s, srv, c
}

// newRealProduction returns a store with the production scripts on a fresh
// redis-server, and a plain client to inspect it.
func newRealProduction(t testing.TB) (*Store, *redistest.Server, *redis.Client) {
	return newRealProductionIn(t, Layout{})
}

// newRealProductionIn is newRealProduction in layout l.
func newRealProductionIn(t testing.TB, l Layout) (*Store, *redistest.Server, *redis.Client) {
	t.Helper()
	srv := redistest.Start(t)
	rdb := NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { rdb.Close() })
	s, err := New(rdb, Config{Layout: l})
	if err != nil {
		t.Fatal(err)
	}
	return s, srv, srv.Client(t)
}
