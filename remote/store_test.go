package remote

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hybridlimit/hybridlimit/internal/algo"
	"github.com/hybridlimit/hybridlimit/internal/limitspec"
	"github.com/hybridlimit/hybridlimit/internal/testkit/conformance"
	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
	"github.com/hybridlimit/hybridlimit/limit"
)

func TestKeyFormat(t *testing.T) {
	s := &Store{prefix: DefaultPrefix}
	tests := []struct {
		l    limit.Limit
		want string
	}{
		{limit.PerMinute(100), "rl:{user:42}:tb:100:1m"},
		{limit.PerHour(1000), "rl:{user:42}:tb:1000:1h"},
		{limit.Limit{Algorithm: limit.TokenBucket, Rate: 10, Period: time.Second, Burst: 50}, "rl:{user:42}:tb:10:1s:50"},
		{limit.Limit{Algorithm: limit.LeakyBucket, Rate: 10, Period: 1500 * time.Millisecond}, "rl:{user:42}:lb:10:1500ms"},
		{limit.Limit{Algorithm: limit.FixedWindow, Rate: 5, Period: 90 * time.Second}, "rl:{user:42}:fw:5:90s"},
		{limit.Limit{Algorithm: limit.SlidingWindowLog, Rate: 5, Period: 250 * time.Microsecond}, "rl:{user:42}:swl:5:250us"},
		{limit.Limit{Algorithm: limit.SlidingWindowCounter, Rate: 5, Period: 24 * time.Hour}, "rl:{user:42}:swc:5:24h"},
	}
	for _, tt := range tests {
		if got := s.Key("user:42", tt.l); got != tt.want {
			t.Errorf("Key(user:42, %v) = %q, want %q", tt.l, got, tt.want)
		}
	}
}

// TestBadInputConsumesNothing: every rejected request leaves Redis empty.
func TestBadInputConsumesNothing(t *testing.T) {
	s, m, _ := newMini(t)
	ctx := context.Background()
	ok := limit.PerSecond(10)
	tests := []struct {
		name   string
		key    string
		cost   int64
		limits []limit.Limit
		want   error
	}{
		{"empty key", "", 1, []limit.Limit{ok}, ErrInvalidKey},
		{"long key", strings.Repeat("k", MaxKeyLen+1), 1, []limit.Limit{ok}, ErrInvalidKey},
		{"no limits", "k", 1, nil, limit.ErrInvalidLimit},
		{"zero rate", "k", 1, []limit.Limit{ok, {Rate: 0, Period: time.Second}}, limit.ErrInvalidLimit},
		{"negative period", "k", 1, []limit.Limit{{Rate: 1, Period: -time.Second}}, limit.ErrInvalidLimit},
		{"unknown algorithm", "k", 1, []limit.Limit{{Algorithm: 9, Rate: 1, Period: time.Second}}, limit.ErrInvalidLimit},
		{"zero cost", "k", 0, []limit.Limit{ok}, limit.ErrInvalidCost},
		{"negative cost", "k", -1, []limit.Limit{ok}, limit.ErrInvalidCost},
		{"cost above one capacity", "k", 11, []limit.Limit{limit.PerMinute(100), ok}, limit.ErrCostExceedsLimit},
		{"too many limits", "k", 1, make([]limit.Limit, MaxLimits+1), ErrTooManyLimits},
		{"limit given twice", "k", 1, []limit.Limit{ok, limit.PerMinute(5), ok}, limit.ErrInvalidLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := s.decide(ctx, tt.key, tt.cost, tt.limits...); !errors.Is(err, tt.want) {
				t.Errorf("Decide = %v, want %v", err, tt.want)
			}
			if keys := m.Keys(); len(keys) != 0 {
				t.Errorf("keys after a rejected request: %v", keys)
			}
		})
	}
	// A Request not built by NewDecision or NewLease is refused by every
	// method, and nothing is sent.
	out := make([]Result, 1)
	for name, err := range map[string]error{
		"Decide":         func() error { _, err := s.Decide(ctx, Request{}); return err }(),
		"DecideMany":     func() error { _ = s.DecideMany(ctx, []Request{{}}, out); return out[0].Err }(),
		"DecidePipeline": func() error { _ = s.DecidePipeline(ctx, []Request{{}}, out); return out[0].Err }(),
		"GiveBack":       s.GiveBack(ctx, Request{}, 1, 1),
	} {
		if !errors.Is(err, limit.ErrInvalidLimit) {
			t.Errorf("%s(zero Request) = %v, want ErrInvalidLimit", name, err)
		}
	}
	if keys := m.Keys(); len(keys) != 0 {
		t.Errorf("keys after a zero Request: %v", keys)
	}
	if _, err := s.lease(ctx, "k", 0, ok); !errors.Is(err, limit.ErrInvalidCost) {
		t.Errorf("Lease(want 0) = %v, want ErrInvalidCost", err)
	}
	if _, err := s.lease(ctx, "", 1, ok); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("Lease(empty key) = %v, want ErrInvalidKey", err)
	}
}

// TestEveryWriteHasTTL: after traffic on every algorithm, no key lacks a TTL.
func TestEveryWriteHasTTL(t *testing.T) {
	s, _, rdb := newRealProduction(t)
	ctx := context.Background()
	for i, set := range limitSets {
		key := string(rune('a' + i))
		for j := 0; j < 5; j++ {
			if _, _, err := s.decide(ctx, key, 1, set...); err != nil {
				t.Fatal(err)
			}
		}
		l, err := s.lease(ctx, key, 2, set...)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.giveBack(ctx, key, l.At, 1, set...); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) == 0 {
		t.Fatal("no keys written")
	}
	for _, k := range keys {
		// -1 is a key without a TTL; -2 one that expired since KEYS.
		ttl, err := rdb.PTTL(ctx, k).Result()
		if err != nil || ttl == -1 {
			t.Errorf("PTTL(%s) = %v, %v; want a TTL", k, ttl, err)
		}
	}
}

// TestTokenBucketIsOneInteger: the token bucket's whole state is one
// integer value, which Redis stores int-encoded.
func TestTokenBucketIsOneInteger(t *testing.T) {
	s, _, rdb := newRealProduction(t)
	ctx := context.Background()
	l := limit.PerMinute(100)
	if _, _, err := s.decide(ctx, "user:1", 3, l); err != nil {
		t.Fatal(err)
	}
	enc, err := rdb.ObjectEncoding(ctx, s.Key("user:1", l)).Result()
	if err != nil || enc != "int" {
		t.Errorf("OBJECT ENCODING = %q, %v; want int", enc, err)
	}
}

// TestNoScriptReload: a node that lost its script cache gets the script
// again, for single, multi-key and pipelined calls, and for leases.
func TestNoScriptReload(t *testing.T) {
	s, srv, rdb := newRealProduction(t)
	ctx := context.Background()
	l := limit.PerSecond(1000)
	reqs := []Request{req("a", 1, []limit.Limit{l}), req("b", 2, []limit.Limit{l})}
	out := make([]Result, len(reqs))
	steps := []struct {
		name string
		call func() error
	}{
		{"Decide", func() error { _, _, err := s.decide(ctx, "a", 1, l); return err }},
		{"DecideMany", func() error { return s.DecideMany(ctx, reqs, out) }},
		{"DecidePipeline", func() error { return s.DecidePipeline(ctx, reqs, out) }},
		{"Lease", func() error { _, err := s.lease(ctx, "a", 5, l); return err }},
		{"GiveBack", func() error { return s.giveBack(ctx, "a", time.Now().UnixMicro(), 1, l) }},
	}
	for _, st := range steps {
		t.Run(st.name+"/flush", func(t *testing.T) {
			if err := rdb.ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			if err := st.call(); err != nil {
				t.Fatalf("%s after SCRIPT FLUSH: %v", st.name, err)
			}
		})
		t.Run(st.name+"/restart", func(t *testing.T) {
			if err := srv.Restart(); err != nil {
				t.Fatal(err)
			}
			// The first call may meet the pool's dead connection; a new
			// connection loads the scripts on connect.
			var err error
			for i := 0; i < 3; i++ {
				if err = st.call(); err == nil {
					break
				}
			}
			if err != nil {
				t.Fatalf("%s after restart: %v", st.name, err)
			}
		})
	}
}

// TestNoScriptReloadPlainClient: with a client that does not load scripts
// on connect, EVALSHA meets NOSCRIPT and the store loads the script itself.
func TestNoScriptReloadPlainClient(t *testing.T) {
	s, _, rdb := newRealProduction(t)
	s.rdb = rdb // plain client: no OnConnect
	ctx := context.Background()
	l := limit.PerHour(1000)
	out := make([]Result, 3)
	reqs := []Request{req("a", 1, []limit.Limit{l}), req("b", 1, []limit.Limit{l}), req("c", 1, []limit.Limit{l})}
	for i := 0; i < 2; i++ {
		if err := rdb.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if err := s.DecidePipeline(ctx, reqs, out); err != nil {
			t.Fatalf("DecidePipeline after flush: %v", err)
		}
		for j, r := range out {
			if r.Err != nil || !r.Allowed || r.Remaining != int64(999-i) {
				t.Errorf("round %d request %d = %+v, want allowed with %d remaining", i, j, r, 999-i)
			}
		}
	}
}

// TestDecideManyMatchesDecide: a multi-key call gives each request what a
// call of its own would.
func TestDecideManyMatchesDecide(t *testing.T) {
	one, _, c1 := newMini(t)
	many, _, c2 := newMini(t)
	pipe, _, c3 := newMini(t)
	ctx := context.Background()
	now := conformance.Base
	var reqs []Request
	for i := 0; i < 40; i++ {
		set := limitSets[i%len(limitSets)]
		reqs = append(reqs, req(string(rune('a'+i%7)), int64(1+i%2), set))
	}
	reqs = append(reqs, Request{}) // bad input in the middle of a batch
	for round := 0; round < 3; round++ {
		now = now.Add(150 * time.Millisecond)
		for _, c := range []clock{c1, c2, c3} {
			c.set(t, now)
		}
		outMany := make([]Result, len(reqs))
		outPipe := make([]Result, len(reqs))
		if err := many.DecideMany(ctx, reqs, outMany); err != nil {
			t.Fatal(err)
		}
		if err := pipe.DecidePipeline(ctx, reqs, outPipe); err != nil {
			t.Fatal(err)
		}
		for i, r := range reqs {
			want, _ := one.Decide(ctx, r)
			if !sameResult(outMany[i], want) || !sameResult(outPipe[i], want) {
				t.Fatalf("round %d request %d: DecideMany = %+v, DecidePipeline = %+v, Decide = %+v", round, i, outMany[i], outPipe[i], want)
			}
		}
	}
}

func sameResult(a, b Result) bool {
	if (a.Err == nil) != (b.Err == nil) {
		return false
	}
	if a.Err != nil {
		return a.Err.Error() == b.Err.Error()
	}
	return a.Decision == b.Decision && a.Binding == b.Binding
}

// TestSlidingLogGiveBackRemovesTheLease: giving back removes the events the
// lease charged, not older ones, so the window frees up when it should.
func TestSlidingLogGiveBackRemovesTheLease(t *testing.T) {
	s, _, c := newMini(t)
	ctx := context.Background()
	l := limit.Limit{Algorithm: limit.SlidingWindowLog, Rate: 6, Period: time.Second}
	t0 := conformance.Base
	c.set(t, t0)
	if _, _, err := s.decide(ctx, "k", 2, l); err != nil {
		t.Fatal(err)
	}
	c.set(t, t0.Add(500*time.Millisecond))
	ls, err := s.lease(ctx, "k", 3, l)
	if err != nil || ls.Granted != 3 {
		t.Fatalf("Lease = %+v, %v; want 3 granted", ls, err)
	}
	if err := s.giveBack(ctx, "k", ls.At, 2, l); err != nil {
		t.Fatal(err)
	}
	// At t0+1s the two events of t0 have left; one leased event remains.
	c.set(t, t0.Add(time.Second))
	d, _, err := s.decide(ctx, "k", 1, l)
	if err != nil || !d.Allowed || d.Remaining != 4 {
		t.Errorf("Decide after give-back = %+v, %v; want allowed with 4 remaining", d, err)
	}
}

// TestLeaseNeverExceedsCapacity: a lease takes what every limit has, and a
// give-back never lifts a limit above its capacity.
func TestLeaseNeverExceedsCapacity(t *testing.T) {
	s, _, c := newMini(t)
	ctx := context.Background()
	c.set(t, conformance.Base)
	limits := []limit.Limit{limit.PerSecond(10), {Algorithm: limit.FixedWindow, Rate: 4, Period: time.Second}}
	ls, err := s.lease(ctx, "k", 100, limits...)
	if err != nil || ls.Granted != 4 || ls.Binding != 1 || ls.Remaining != 0 {
		t.Fatalf("Lease(100) = %+v, %v; want 4 granted, bound by the window", ls, err)
	}
	ls2, err := s.lease(ctx, "k", 1, limits...)
	if err != nil || ls2.Granted != 0 || ls2.RetryAfter != time.Second {
		t.Fatalf("second Lease = %+v, %v; want none, retry after 1s", ls2, err)
	}
	if err := s.giveBack(ctx, "k", ls.At, 1000, limits...); err != nil {
		t.Fatal(err)
	}
	d, _, err := s.decide(ctx, "k", 1, limits...)
	if err != nil || !d.Allowed || d.Remaining != 3 {
		t.Errorf("Decide after give-back = %+v, %v; want allowed, 3 remaining (capacity 4)", d, err)
	}
}

func TestBoundOptions(t *testing.T) {
	called := false
	user := &redis.Options{
		Addr:        "127.0.0.1:1",
		Password:    "secret",
		ReadTimeout: 5 * time.Second,
		MaxRetries:  3,
		DialTimeout: 10 * time.Millisecond,
		OnConnect:   func(context.Context, *redis.Conn) error { called = true; return nil },
	}
	o := BoundOptions(user)
	if !o.ContextTimeoutEnabled || o.MaxRetries != -1 || o.DialerRetries != 1 || o.ReadTimeout != DefaultReadTimeout ||
		o.WriteTimeout != DefaultWriteTimeout || o.PoolTimeout != DefaultPoolTimeout || o.DialTimeout != 10*time.Millisecond {
		t.Errorf("BoundOptions = %+v", o)
	}
	if o.MaintNotificationsConfig == nil || o.MaintNotificationsConfig.Mode != "disabled" {
		t.Errorf("maintenance notifications not disabled: %+v", o.MaintNotificationsConfig)
	}
	if o.Password != "secret" || o.Addr != user.Addr {
		t.Errorf("BoundOptions lost the address or credentials")
	}
	if user.MaxRetries != 3 || user.ReadTimeout != 5*time.Second {
		t.Errorf("BoundOptions modified its argument")
	}
	_ = called
}

// TestPausedNodeBoundedByContext: a SIGSTOPped node holds a call no longer
// than its context allows, and the script is not sent twice.
func TestPausedNodeBoundedByContext(t *testing.T) {
	s, srv, rdb := newRealProduction(t)
	ctx := context.Background()
	l := limit.PerMinute(1000)
	if _, _, err := s.decide(ctx, "k", 1, l); err != nil {
		t.Fatal(err)
	}
	before := redistest.ScriptCalls(t, rdb)
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	start := time.Now()
	_, _, err := s.decide(cctx, "k", 1, l)
	elapsed := time.Since(start)
	cancel()
	if err == nil {
		t.Fatal("Decide on a paused node succeeded")
	}
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	// The timed-out call ran once when the node resumed, and only once.
	deadline := time.Now().Add(2 * time.Second)
	var after int64
	for time.Now().Before(deadline) {
		if after = redistest.ScriptCalls(t, rdb); after-before >= 1 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if after-before != 1 {
		t.Errorf("script calls after a timed-out call = %d, want 1 (no retry)", after-before)
	}
	if elapsed > 2*time.Second {
		t.Errorf("Decide on a paused node took %v; the 50ms context did not bound it", elapsed)
	}
	t.Logf("paused node: Decide returned %v after %v", err, elapsed)
}

// TestLeasesInMultiKeyCalls: leases sent among decisions in one script call
// (DecideMany) or one pipeline (DecidePipeline) run after the decisions,
// take what they left, as Store.Lease takes it, and charge the same state.
func TestLeasesInMultiKeyCalls(t *testing.T) {
	s, _, _ := newRealProduction(t)
	ctx := context.Background()
	l := []limit.Limit{limit.PerHour(100)}
	for _, tt := range []struct {
		name string
		call func([]Request, []Result) error
	}{
		{"DecideMany", func(r []Request, o []Result) error { return s.DecideMany(ctx, r, o) }},
		{"DecidePipeline", func(r []Request, o []Result) error { return s.DecidePipeline(ctx, r, o) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, b := tt.name+":a", tt.name+":b"
			reqs := []Request{
				leaseReq(a, 30, l),
				req(b, 1, l),
				leaseReq(a, 500, l), // 69 left: the decision below runs first
				req(a, 1, l),        // before the leases: allowed
				{},                  // bad: nothing sent
			}
			out := make([]Result, len(reqs))
			if err := tt.call(reqs, out); err != nil {
				t.Fatal(err)
			}
			want := []struct {
				allowed bool
				granted int64
				lease   bool
			}{{true, 30, true}, {true, 0, false}, {true, 69, true}, {true, 0, false}}
			for i, w := range want {
				r := out[i]
				if r.Err != nil || r.Allowed != w.allowed || r.Granted != w.granted || (w.lease && r.At <= 0) {
					t.Errorf("request %d = %+v, want allowed %v, granted %d, At set %v", i, r, w.allowed, w.granted, w.lease)
				}
			}
			if !errors.Is(out[4].Err, limit.ErrInvalidLimit) {
				t.Errorf("zero Request: Err = %v, want ErrInvalidLimit", out[4].Err)
			}
			// The state is the one Store.Lease and Decide see.
			if g, err := s.lease(ctx, b, 1000, l...); err != nil || g.Granted != 99 {
				t.Errorf("Lease(%s) after = %+v, %v; want the 99 units left", b, g, err)
			}
		})
	}
}

// TestEviction reads a node's eviction settings: the default never evicts,
// allkeys-lru and volatile-lru with a maxmemory may (every key we write
// has a TTL), and a policy without a maxmemory does not.
func TestEviction(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want Eviction
		may  bool
	}{
		{nil, Eviction{Policy: "noeviction"}, false},
		{[]string{"--maxmemory", "100mb", "--maxmemory-policy", "allkeys-lru"}, Eviction{Policy: "allkeys-lru", MaxMemory: 100 << 20}, true},
		{[]string{"--maxmemory", "100mb", "--maxmemory-policy", "volatile-ttl"}, Eviction{Policy: "volatile-ttl", MaxMemory: 100 << 20}, true},
		{[]string{"--maxmemory-policy", "allkeys-lru"}, Eviction{Policy: "allkeys-lru"}, false},
	} {
		srv := redistest.Start(t, redistest.WithArgs(tc.args...))
		s, err := New(srv.Client(t), Config{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Eviction(context.Background())
		if err != nil || got != tc.want || got.MayEvict() != tc.may {
			t.Errorf("%v: Eviction() = %+v (MayEvict %v), %v; want %+v (%v)", tc.args, got, got.MayEvict(), err, tc.want, tc.may)
		}
	}
}

// TestRefundRemovesNewestEvents: a SlidingWindowLog refund removes the
// newest events, not the oldest, so the oldest still leave the window
// first: with events at 0, 100 and 200 ms under 3/s and the one at 200 ms
// refunded, a request at 300 ms passes and the next must wait for the
// event at 0 to leave (at 1 s), 700 ms; had the refund removed the oldest,
// it would wait 800 ms. On miniredis and real redis-server, as package
// limit does.
func TestRefundRemovesNewestEvents(t *testing.T) {
	for name, newStore := range map[string]func(*testing.T) (*Store, clock){
		"miniredis":       func(t *testing.T) (*Store, clock) { s, _, c := newMini(t); return s, c },
		"redis/functions": func(t *testing.T) (*Store, clock) { s, _, c := newRealMode(t, true); return s, c },
		"redis/scripts":   func(t *testing.T) (*Store, clock) { s, _, c := newRealMode(t, false); return s, c },
	} {
		t.Run(name, func(t *testing.T) {
			s, c := newStore(t)
			ctx := context.Background()
			l := limit.Limit{Algorithm: limit.SlidingWindowLog, Rate: 3, Period: time.Second}
			base := conformance.Base
			var st algo.State
			sp := limitspec.Valid(l)
			for _, ms := range []int{0, 100, 200} {
				c.set(t, base.Add(time.Duration(ms)*time.Millisecond))
				if d, _, err := s.decide(ctx, "k", 1, l); err != nil || !d.Allowed {
					t.Fatalf("decide at %d ms = %+v, %v", ms, d, err)
				}
				var ref algo.Decision
				sp.TakeTo(&ref, &st, base.Add(time.Duration(ms)*time.Millisecond).UnixMicro(), 1)
			}
			if err := s.refund(ctx, "k", 1, l); err != nil {
				t.Fatal(err)
			}
			algo.RefundSpecs([]*algo.State{&st}, []algo.Spec{sp}, base.Add(200*time.Millisecond).UnixMicro(), 1)
			at := base.Add(300 * time.Millisecond)
			c.set(t, at)
			for i, wantAllowed := range []bool{true, false} {
				d, _, err := s.decide(ctx, "k", 1, l)
				var ref limit.Decision
				sp.TakeTo(limitspec.Decision(&ref), &st, at.UnixMicro(), 1)
				if err != nil || d.Allowed != wantAllowed || d != ref {
					t.Fatalf("request %d at 300 ms = %+v, %v; want allowed %v, as the transitions say: %+v", i, d, err, wantAllowed, ref)
				}
				if !wantAllowed && d.RetryAfter != 700*time.Millisecond {
					t.Fatalf("RetryAfter = %v, want 700ms (the oldest event leaves at 1 s)", d.RetryAfter)
				}
			}
		})
	}
}

// TestTokenBucketTTL: a token bucket's key lives exactly until the bucket
// is full again, rounded up to the millisecond, plus one: never shorter,
// which would forget tokens in use, nor much longer, which holds memory.
// On miniredis, whose clock stands still between the decision and PTTL.
func TestTokenBucketTTL(t *testing.T) {
	s, m, c := newMini(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), Protocol: 2})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	now := conformance.Base.Add(123456789 * time.Microsecond)
	c.set(t, now)
	limits := []limit.Limit{
		limit.PerSecond(5),
		limit.PerMinute(100),
		{Rate: 7, Period: 3 * time.Second, Burst: 9},
		{Rate: 1000, Period: 1100 * time.Millisecond},
	}
	for i, l := range limits {
		for n := int64(1); n <= 3; n++ {
			key := "ttl:" + strconv.Itoa(i) + ":" + strconv.FormatInt(n, 10)
			req, err := NewDecision(key, n, l)
			if err != nil {
				t.Fatal(err)
			}
			out := make([]Result, 2)
			other, _ := NewDecision(key+":other", 1, l)
			if err := s.DecideMany(ctx, []Request{req, other}, out); err != nil {
				t.Fatal(err)
			}
			if !out[0].Allowed {
				t.Fatalf("%v, %d units: denied", l, n)
			}
			got, err := rdb.PTTL(ctx, s.tagged(tagOf(key), l)).Result()
			if err != nil {
				t.Fatal(err)
			}
			want := max((out[0].ResetAfter+time.Millisecond-1)/time.Millisecond, 1)*time.Millisecond + time.Millisecond
			if got != want {
				t.Errorf("%v, %d units: PTTL %v, want %v (reset after %v)", l, n, got, want, out[0].ResetAfter)
			}
		}
	}
	// Several token buckets in one request (TB.take_all): each key lives
	// as long as it does when its limit is alone.
	for i := range limits {
		pair := []limit.Limit{limits[i], limits[(i+1)%len(limits)]}
		for n := int64(1); n <= 3; n++ {
			key := "ttl2:" + strconv.Itoa(i) + ":" + strconv.FormatInt(n, 10)
			req, err := NewDecision(key, n, pair...)
			if err != nil {
				t.Fatal(err)
			}
			out := make([]Result, 1)
			if err := s.DecideMany(ctx, []Request{req}, out); err != nil || !out[0].Allowed {
				t.Fatalf("%v, %d units: %+v, %v", pair, n, out[0], err)
			}
			for _, l := range pair {
				got, err := rdb.PTTL(ctx, s.tagged(tagOf(key), l)).Result()
				if err != nil {
					t.Fatal(err)
				}
				alone := "ttl:" + strconv.Itoa(slices.Index(limits, l)) + ":" + strconv.FormatInt(n, 10)
				want, err := rdb.PTTL(ctx, s.tagged(tagOf(alone), l)).Result()
				if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("%v, %d units: the key of %v has PTTL %v, %v alone %v", pair, n, l, got, l, want)
				}
			}
		}
	}
}

// TestBadLayout: New refuses a Layout it cannot honour, naming the field,
// and sizes a compact one from its Keys.
func TestBadLayout(t *testing.T) {
	rdb := NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	for _, l := range []Layout{
		{Keys: 1000},
		{Compact: true, Keys: -1},
		{Compact: true, Keys: MaxLayoutKeys + 1},
	} {
		if _, err := New(rdb, Config{Layout: l}); err == nil || !strings.Contains(err.Error(), "Layout.Keys") {
			t.Errorf("New(%+v) error = %v, want one naming Layout.Keys", l, err)
		}
		if err := l.Validate(); err == nil {
			t.Errorf("%+v.Validate() = nil", l)
		}
	}
	for l, buckets := range map[Layout]uint64{
		{}:                                0,
		{Compact: true}:                   (DefaultLayoutKeys + KeysPerHash - 1) / KeysPerHash,
		{Compact: true, Keys: 1}:          1,
		{Compact: true, Keys: 10_000_000}: (10_000_000 + KeysPerHash - 1) / KeysPerHash,
	} {
		s, err := New(rdb, Config{Layout: l})
		if err != nil {
			t.Errorf("New(%+v) error = %v", l, err)
			continue
		}
		if s.buckets != buckets {
			t.Errorf("New(%+v): %d buckets, want %d", l, s.buckets, buckets)
		}
	}
}

// TestCompactCodeReachesNoKey: in the compact layout's code, the files of
// the string-state algorithms, the shared helpers and the entry points
// read, write and delete states only through sget, sset and kdel
// (compact.lua): no GET, SET or DEL of a key is left for a rewrite to
// have missed.
func TestCompactCodeReachesNoKey(t *testing.T) {
	files := []string{"token_bucket.lua", "leaky_bucket.lua", "fixed_window.lua", "sliding_window_counter.lua", common}
	files = append(files, entryFiles[:]...)
	for _, name := range files {
		src := (&source{compact: true}).file(name)
		for _, cmd := range []string{"rcall('GET'", "rcall('SET'", "rcall('DEL'"} {
			if strings.Contains(src, cmd) {
				t.Errorf("%s, compact: %s is left", name, cmd)
			}
		}
	}
}

// TestCompactLongKeys: in the compact layout a key longer than Redis's
// hash-max-listpack-value (64 bytes), or one that starts with a zero byte,
// is a field named by its digest: its hash stays a listpack, and every key
// keeps a budget of its own.
func TestCompactLongKeys(t *testing.T) {
	s, _, rdb := newRealProductionIn(t, Layout{Compact: true, Keys: 1})
	ctx := context.Background()
	l := limit.PerMinute(3)
	keys := []string{strings.Repeat("a", 100), strings.Repeat("a", 99) + "b", "\x00" + strings.Repeat("z", 16), "short", strings.Repeat("c", 64)}
	for _, k := range keys {
		for i := range 4 {
			d, _, err := s.decide(ctx, k, 1, l)
			if err != nil || d.Allowed != (i < 3) {
				t.Fatalf("key %q, request %d: %+v, %v; want allowed %v", k[:min(len(k), 8)], i+1, d, err, i < 3)
			}
		}
	}
	hashes, err := rdb.Keys(ctx, "*c1#*").Result()
	if err != nil || len(hashes) != 1 {
		t.Fatalf("hashes %v, %v; want the bucket's one", hashes, err)
	}
	if enc := rdb.ObjectEncoding(ctx, hashes[0]).Val(); enc != "listpack" {
		t.Errorf("%s is a %s, want a listpack", hashes[0], enc)
	}
	fields := rdb.HKeys(ctx, hashes[0]).Val()
	if len(fields) != len(keys)+1 { // and the sentinel
		t.Errorf("%d fields, want %d and the sentinel", len(fields), len(keys))
	}
	for _, f := range fields {
		if len(f) > maxFieldLen {
			t.Errorf("a field of %d bytes", len(f))
		}
	}
}
