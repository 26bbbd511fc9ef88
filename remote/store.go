package remote

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hybridlimit/hybridlimit/internal/limitspec"
	"github.com/hybridlimit/hybridlimit/limit"
)

// MaxLimits is the most limits one request may carry.
const MaxLimits = 16

// Client is what a Store needs of a go-redis client; *redis.Client,
// *redis.ClusterClient and redis.UniversalClient have it (New refuses a
// *redis.Ring).
type Client interface {
	redis.Scripter
	Pipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error)
	Process(ctx context.Context, cmd redis.Cmder) error
}

var _ Client = (redis.UniversalClient)(nil)

// Config configures a Store.
type Config struct {
	// Prefix starts every Redis key. Default DefaultPrefix ("rl:").
	Prefix string
}

// Store decides limits on one Redis node. It is safe for concurrent use and
// holds no resources of its own: closing the client is the caller's.
type Store struct {
	rdb       Client
	oneCall   bool // a batch is one script call: the client talks to one server
	conc      int  // see Concurrency
	prefix    string
	scripts   *scriptSet
	lastArgs  atomic.Pointer[boxedSpec] // see specArgs
	refreshed atomic.Int64              // unix ns of the last Refresh that reloaded
}

// New returns a Store on rdb. It does not contact Redis; call Load to load
// the scripts ahead of the first decision (clients from NewClient load them
// on connect).
func New(rdb Client, cfg Config) (*Store, error) {
	if rdb == nil {
		return nil, fmt.Errorf("remote: nil client")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if strings.ContainsAny(cfg.Prefix, "{}") {
		return nil, fmt.Errorf("remote: prefix %q holds a brace, which would move the hash tag", cfg.Prefix)
	}
	st := &Store{rdb: rdb, prefix: cfg.Prefix, scripts: defaultScripts, conc: DefaultConcurrency}
	switch c := rdb.(type) {
	case *redis.Client: // one server, or a Sentinel group's master
		st.oneCall = true
		st.conc = c.Options().PoolSize
	case *redis.ClusterClient:
		st.conc = c.Options().PoolSize
	case *redis.Ring:
		// A Ring shards by itself, behind one breaker of its user's: one
		// shard down sends every key to the failure mode.
		return nil, fmt.Errorf("remote: a *redis.Ring shards by itself: pass each of its shards as a node of its own (hybrid's Config.Nodes), which the Limiter shards with a breaker each")
	}
	st.conc = max(st.conc, 1)
	return st, nil
}

// DefaultConcurrency is what Concurrency reports for a client whose pool
// size cannot be read.
const DefaultConcurrency = 10

// Concurrency is how many calls the client can carry at once without
// waiting for a connection: its pool size (per server for a Cluster), or
// DefaultConcurrency for a client of another type.
func (s *Store) Concurrency() int { return s.conc }

// DecideBatch decides many requests in one round trip, the way the client
// needs: one multi-key script call (DecideMany) on a client of one server
// (*redis.Client, also a Sentinel failover client); one pipeline of script
// calls (DecidePipeline) on a Redis Cluster or any other client,
// whose requests may live on different servers. out must have len(reqs)
// elements; the returned error is that of the round trip.
func (s *Store) DecideBatch(ctx context.Context, reqs []Request, out []Result) error {
	if s.oneCall {
		return s.DecideMany(ctx, reqs, out)
	}
	return s.DecidePipeline(ctx, reqs, out)
}

// Load loads the scripts into the node's script cache.
func (s *Store) Load(ctx context.Context) error { return s.scripts.load(ctx, s.rdb) }

// Eviction is what a node's memory settings say about the limiter's keys.
type Eviction struct {
	// Policy is the node's maxmemory-policy ("noeviction", "allkeys-lru",
	// ...); MaxMemory its maxmemory in bytes, 0 for no limit.
	Policy    string
	MaxMemory int64
}

// MayEvict reports whether the node can drop limiter keys under memory
// pressure: a maxmemory is set and the policy is not noeviction. Every key
// the limiter writes has a TTL, so the volatile-* policies evict them as
// readily as the allkeys-* ones. An evicted key starts afresh: its client
// is handed a full budget.
func (e Eviction) MayEvict() bool { return e.MaxMemory > 0 && e.Policy != "noeviction" }

// Eviction reads the node's maxmemory and maxmemory-policy (CONFIG GET).
// It fails where CONFIG is not allowed (an ACL user without it, a managed
// Redis that renames it); on a Redis Cluster it asks one node.
func (s *Store) Eviction(ctx context.Context) (Eviction, error) {
	cmd := redis.NewMapStringStringCmd(ctx, "config", "get", "maxmemory*")
	if err := s.rdb.Process(ctx, cmd); err != nil {
		return Eviction{}, err
	}
	m := cmd.Val()
	p, ok := m["maxmemory-policy"]
	if !ok {
		return Eviction{}, fmt.Errorf("%w: CONFIG GET maxmemory* has no maxmemory-policy", ErrReply)
	}
	var e Eviction
	e.Policy = p
	if _, err := fmt.Sscan(m["maxmemory"], &e.MaxMemory); err != nil {
		return Eviction{}, fmt.Errorf("%w: maxmemory %q", ErrReply, m["maxmemory"])
	}
	return e, nil
}

// Connect opens up to n connections to the node at once (n concurrent
// PINGs), so that the first requests of a busy moment do not pay for a
// connection's handshake (a HELLO round trip, which go-redis makes on a
// connection's first use) inside their budget. It returns the first error.
func (s *Store) Connect(ctx context.Context, n int) error {
	errs := make(chan error, n)
	for range n {
		go func() { errs <- s.rdb.Process(ctx, redis.NewStatusCmd(ctx, "ping")) }()
	}
	var first error
	for range n {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Result is the outcome of one request. Binding is the index of the binding
// limit in the request's limits. Err is set for a request that was not
// sent (one not built by NewDecision or NewLease) or whose call failed.
type Result struct {
	limit.Decision
	Binding int
	Err     error
	// Granted and At are set for a lease: the units taken (Allowed is
	// Granted > 0) and the server time of the lease, µs since the Unix
	// epoch (GiveBack needs it).
	Granted, At int64
}

// head is the arguments before a request's limits in a multi-key decide
// call: its cost, or minus the units of a lease.
func (r Request) head() int64 {
	if r.lease {
		return -r.n
	}
	return r.n
}

// parseReply reads one request's values from a decide script's reply and
// returns how many it took: 6 for a decision, 7 for a lease.
func parseReply(v []int64, lease bool, r *Result) (int, error) {
	n := 6
	if lease {
		n = 7
	}
	if len(v) < n {
		return 0, fmt.Errorf("%w: %d values left, want %d", ErrReply, len(v), n)
	}
	if err := parseDecision(v[:6], r); err != nil {
		return 0, err
	}
	if lease {
		r.Granted, r.At = v[0], v[6]
		r.Allowed = v[0] > 0
	}
	return n, nil
}

// appendRequest appends the keys and arguments of one request for key.
func (s *Store) appendRequest(keys []string, args []any, key string, limits []limit.Limit) ([]string, []any) {
	return s.appendTagged(keys, args, tagOf(key), limits)
}

// appendTagged is appendRequest for the keys of hash tag tag (tagOf of a
// user key, or the probe's reserved tag).
func (s *Store) appendTagged(keys []string, args []any, tag string, limits []limit.Limit) ([]string, []any) {
	args = append(args, len(limits))
	for _, l := range limits {
		keys = append(keys, s.tagged(tag, l))
		args = append(args, s.specArgs(l)...)
	}
	return keys, args
}

// namedFlag is added to a named limit's algorithm in its script arguments
// (NAMED in common.lua).
const namedFlag = 8

// specArgs are the five script arguments of a limit, boxed. The boxes of
// the limit used last are kept: a busy node sees the same few limits over
// and over, and boxing four integers above 255 allocates four times.
func (s *Store) specArgs(l limit.Limit) []any {
	if c := s.lastArgs.Load(); c != nil && c.l == l {
		return c.args[:]
	}
	sp := limitspec.Valid(l) // validated by check
	alg := int(sp.Algorithm)
	if sp.Named {
		alg += namedFlag
	}
	c := &boxedSpec{l: l, args: [5]any{alg, sp.Q, sp.P, sp.R, sp.C}}
	s.lastArgs.Store(c)
	return c.args[:]
}

// boxedSpec is a limit with its script arguments, boxed.
type boxedSpec struct {
	l    limit.Limit
	args [5]any
}

// Decide decides one request in one script call: a decision, all or
// nothing, or a lease (Result.Granted, Result.At). The error is that of
// the call, also set in Result.Err.
func (s *Store) Decide(ctx context.Context, req Request) (r Result, err error) {
	if r.Err = req.built(); r.Err != nil {
		return r, r.Err
	}
	sc, head := s.scripts.decideOne(req.limits), []any{1, req.n}
	if req.lease {
		sc, head = s.scripts.lease[mask(req.limits)], []any{req.n}
	}
	keys, args := s.appendRequest(make([]string, 0, len(req.limits)), head, req.key, req.limits)
	vals, err := sc.runInts(ctx, s.rdb, keys, args).Result()
	if err == nil {
		var n int
		n, err = parseReply(vals, req.lease, &r)
		if err == nil && n != len(vals) {
			err = fmt.Errorf("%w: %d values, want %d", ErrReply, len(vals), n)
		}
	}
	r.Err = err
	return r, err
}

// DecideMany decides many requests in one script call on one node: one
// round trip for all. Requests with bad input get their error in out and
// are not sent. All the keys go to one script call, so on Redis Cluster use
// DecidePipeline. out must have len(reqs) elements; the returned error is
// that of the call, also set in every sent request's Err.
func (s *Store) DecideMany(ctx context.Context, reqs []Request, out []Result) error {
	if len(out) != len(reqs) {
		return fmt.Errorf("remote: %d results for %d requests", len(out), len(reqs))
	}
	keys := make([]string, 0, len(reqs))
	args := make([]any, 1, 1+len(reqs)*7)
	sent := make([]int, 0, len(reqs))
	m := 0
	for i, r := range reqs {
		out[i] = Result{}
		if err := r.built(); err != nil {
			out[i].Err = err
			continue
		}
		m |= mask(r.limits)
		args = append(args, r.head())
		keys, args = s.appendRequest(keys, args, r.key, r.limits)
		sent = append(sent, i)
	}
	if len(sent) == 0 {
		return nil
	}
	args[0] = len(sent)
	vals, err := s.scripts.decide[m].runInts(ctx, s.rdb, keys, args).Result()
	for _, i := range sent {
		if err != nil {
			out[i].Err = err
			continue
		}
		var n int
		n, err = parseReply(vals, reqs[i].lease, &out[i])
		if err != nil {
			out[i].Err = err
			continue
		}
		vals = vals[n:]
	}
	if err == nil && len(vals) != 0 {
		err = fmt.Errorf("%w: %d values left over", ErrReply, len(vals))
	}
	if err != nil {
		for _, i := range sent {
			if out[i].Err == nil {
				out[i].Err = err
			}
		}
	}
	return err
}

// DecidePipeline decides many requests as one pipeline of script calls,
// one per request: one round trip, and each request may live in its own
// Redis Cluster slot. Requests that met NOSCRIPT are sent again after the
// script is loaded. Each request's outcome is its own (out[i].Err): the
// returned error is that of the first failed command when none succeeded,
// and nil when some did, since on a Cluster one failed shard
// says nothing of the others, and a node's breaker must not open for the
// shards that answer.
func (s *Store) DecidePipeline(ctx context.Context, reqs []Request, out []Result) error {
	if len(out) != len(reqs) {
		return fmt.Errorf("remote: %d results for %d requests", len(out), len(reqs))
	}
	type call struct {
		i    int
		sc   *script
		keys []string
		args []any
		cmd  *redis.Cmd
	}
	calls := make([]call, 0, len(reqs))
	for i, r := range reqs {
		out[i] = Result{}
		if err := r.built(); err != nil {
			out[i].Err = err
			continue
		}
		sc, head := s.scripts.decideOne(r.limits), []any{1, r.n}
		if r.lease {
			sc, head = s.scripts.lease[mask(r.limits)], []any{r.n}
		}
		keys, args := s.appendRequest(make([]string, 0, len(r.limits)), head, r.key, r.limits)
		calls = append(calls, call{i: i, sc: sc, keys: keys, args: args})
	}
	if len(calls) == 0 {
		return nil
	}
	send := func(cs []*call) {
		// Errors are read per command below.
		_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, c := range cs {
				c.cmd = p.EvalSha(ctx, c.sc.sha, c.keys, c.args...)
			}
			return nil
		})
	}
	all := make([]*call, len(calls))
	for i := range calls {
		all[i] = &calls[i]
	}
	send(all)
	var again []*call
	loaded := map[*script]error{}
	for _, c := range all {
		if !isNoScript(c.cmd.Err()) {
			continue
		}
		if _, ok := loaded[c.sc]; !ok {
			loaded[c.sc] = s.rdb.ScriptLoad(ctx, c.sc.src).Err()
		}
		if loaded[c.sc] == nil {
			again = append(again, c)
		}
	}
	if len(again) > 0 {
		send(again)
	}
	var firstErr error
	answered := false
	for _, c := range calls {
		vals, err := c.cmd.Int64Slice()
		if err != nil {
			out[c.i].Err = err
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		answered = true
		n, err := parseReply(vals, reqs[c.i].lease, &out[c.i])
		if err == nil && n != len(vals) {
			err = fmt.Errorf("%w: %d values, want %d", ErrReply, len(vals), n)
		}
		out[c.i].Err = err
	}
	if answered {
		return nil
	}
	return firstErr
}

// parseDecision reads allowed, binding, remaining, retry, reset, delay.
func parseDecision(v []int64, r *Result) error {
	if len(v) != 6 {
		return fmt.Errorf("%w: %d values, want 6", ErrReply, len(v))
	}
	r.Allowed = v[0] == 1
	r.Binding = int(v[1])
	r.Remaining = v[2]
	r.RetryAfter = time.Duration(v[3]) * time.Microsecond
	r.ResetAfter = time.Duration(v[4]) * time.Microsecond
	r.Delay = time.Duration(v[5]) * time.Microsecond
	return nil
}

// GiveBack returns units of a lease taken at server time at (Result.At)
// to all of req's limits for its key, never above their capacity.
func (s *Store) GiveBack(ctx context.Context, req Request, at, units int64) error {
	if err := req.built(); err != nil {
		return err
	}
	if units < 1 {
		return nil
	}
	keys, args := s.appendRequest(make([]string, 0, len(req.limits)), []any{units, at}, req.key, req.limits)
	return s.scripts.giveBack[mask(req.limits)].run(ctx, s.rdb, keys, args).Err()
}

// Peek answers what Decide of a decision of one unit for req's key and
// limits would answer now, charging nothing (req's N and kind are
// ignored). The error is that of the call, also set in Result.Err.
func (s *Store) Peek(ctx context.Context, req Request) (r Result, err error) {
	if r.Err = req.built(); r.Err != nil {
		return r, r.Err
	}
	keys, args := s.appendRequest(make([]string, 0, len(req.limits)), make([]any, 0, 1+5*len(req.limits)), req.key, req.limits)
	vals, err := s.scripts.peek[mask(req.limits)].runInts(ctx, s.rdb, keys, args).Result()
	if err == nil {
		err = parseDecision(vals, &r)
	}
	r.Err = err
	return r, err
}

// Refund gives units back now to every one of req's limits for its key,
// never above their capacity, whenever they were taken: buckets get them
// back; a window from its current count (a SlidingWindowCounter from the
// previous window's once the current one's is spent); a SlidingWindowLog
// loses its newest events. req's N and kind are ignored.
func (s *Store) Refund(ctx context.Context, req Request, units int64) error {
	if err := req.built(); err != nil {
		return err
	}
	if units < 1 {
		return fmt.Errorf("%w: refund of %d", limit.ErrInvalidCost, units)
	}
	keys, args := s.appendRequest(make([]string, 0, len(req.limits)), []any{units, -1}, req.key, req.limits)
	return s.scripts.giveBack[mask(req.limits)].run(ctx, s.rdb, keys, args).Err()
}

// Reset deletes the state of req's limits for its key: the next decision
// starts afresh. The keys share a hash tag, so this is one DEL on one slot.
func (s *Store) Reset(ctx context.Context, req Request) error {
	if err := req.built(); err != nil {
		return err
	}
	del := make([]any, 1, 1+len(req.limits))
	del[0] = "del"
	tag := tagOf(req.key)
	for _, l := range req.limits {
		del = append(del, s.tagged(tag, l))
	}
	return s.rdb.Process(ctx, redis.NewIntCmd(ctx, del...))
}
