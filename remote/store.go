package remote

import (
	"context"
	"fmt"
	"slices"
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
	// Scripter loads the scripts (SCRIPT EXISTS, SCRIPT LOAD) where the
	// node has no functions.
	redis.Scripter
	// Pipelined sends several commands in one round trip: a batch's
	// script calls on a client that is neither a *redis.Client (one
	// multi-request script call) nor a *redis.ClusterClient (whose batch
	// travels over the Store's own clients of its masters, cluster.go).
	Pipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error)
	// Process runs one command the Store builds itself: FCALL or EVALSHA,
	// FUNCTION LOAD, CONFIG GET, DEL.
	Process(ctx context.Context, cmd redis.Cmder) error
}

var _ Client = (redis.UniversalClient)(nil)

// Config configures a Store.
type Config struct {
	// Prefix starts every Redis key. Default DefaultPrefix ("rl:").
	Prefix string
	// Layout is how states are kept: a key each (the zero Layout), or
	// fields of shared hashes (Layout.Compact).
	Layout Layout
}

// Store decides limits on one Redis node. It is safe for concurrent use.
// On a client of one server it holds no resources of its own: closing the
// client is the caller's. On a Redis Cluster it routes its commands itself
// (cluster.go), over clients of its own for each master, which Close
// closes.
type Store struct {
	rdb      Client
	cl       *cluster // a Redis Cluster's slot map and masters, or nil
	oneCall  bool     // a batch is one script call: the client talks to one server
	conc     int      // see Concurrency
	prefix   string
	layout   Layout
	buckets  uint64 // the compact layout's buckets; 0 for the default layout
	scripts  *scriptSet
	lastArgs atomic.Pointer[boxedSpec] // see specArgs
	fn       atomic.Bool               // the code runs as a function library (Functions)
}

// New returns a Store on rdb. It does not contact Redis; call Load (or
// Probe) to load the Lua code, and on a Redis Cluster the slot map, ahead
// of the first decision. Of a *redis.ClusterClient it uses only the
// options; Close releases the connections it opens.
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
	buckets, err := cfg.Layout.check()
	if err != nil {
		return nil, err
	}
	st := &Store{rdb: rdb, prefix: cfg.Prefix, scripts: defaultScripts, conc: DefaultConcurrency, layout: cfg.Layout, buckets: buckets}
	if buckets > 0 {
		st.scripts = compactScripts
	}
	// Functions until a node says otherwise: Load decides, and so does
	// the first call to a node without functions (FCALL is an unknown
	// command there, and so is FUNCTION LOAD).
	st.fn.Store(true)
	switch c := rdb.(type) {
	case *redis.Client: // one server, or a Sentinel group's master
		st.oneCall = true
		st.conc = c.Options().PoolSize
	case *redis.ClusterClient:
		st.cl = newCluster(c)
		st.conc = c.Options().PoolSize
	case *redis.Ring:
		// A Ring shards by itself, behind one breaker of its user's: one
		// shard down sends every key to the failure mode.
		return nil, fmt.Errorf("remote: a *redis.Ring shards by itself: pass each of its shards as a node of its own (hybrid's Config.Nodes), which the Limiter shards with a breaker each")
	}
	st.conc = max(st.conc, 1)
	return st, nil
}

// Close releases what the Store holds: on a Redis Cluster, its clients of
// the masters. It does not close the client given to New. Idempotent.
func (s *Store) Close() error {
	if s.cl == nil {
		return nil
	}
	return s.cl.close()
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
	if err := s.process(ctx, -1, cmd); err != nil {
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
	procs := []func(context.Context, redis.Cmder) error{s.rdb.Process}
	if s.cl != nil { // each master's pool, once the slot map names them
		if err := s.cl.ready(ctx); err != nil {
			return err
		}
		procs = procs[:0]
		for _, m := range s.cl.masters() {
			procs = append(procs, m.client.Process)
		}
	}
	errs := make(chan error, n*len(procs))
	for _, p := range procs {
		for range n {
			go func() { errs <- p(ctx, redis.NewStatusCmd(ctx, "ping")) }()
		}
	}
	var first error
	for range n * len(procs) {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Result is the outcome of one request.
type Result struct {
	// Decision is the answer for the binding limit.
	limit.Decision
	// Binding is the index of the binding limit in the request's limits.
	Binding int
	// Err is set for a request that was not sent (one not built by
	// NewDecision or NewLease) or whose call failed; the other fields then
	// mean nothing.
	Err error
	// Granted and At are set for a lease: the units taken (Allowed is
	// Granted > 0) and the server time of the lease, µs since the Unix
	// epoch (GiveBack needs it).
	Granted, At int64
}

// maxSets is how many sets of limits one decide call can name (SETS in
// prelude.lua): a request's head is its cost times maxSets plus its set.
const maxSets = 1024

// giveHead is added to a give-back's head (GIVE in prelude.lua): every
// other head is below it.
const giveHead = 1 << 51

// head is a request's head in a decide call (decide.lua), naming set:
// cost × maxSets + set for a decision, minus (units × maxSets + set) for a
// lease, giveHead + units × maxSets + set for a give-back (followed by its
// at). Within 2^53: a cost is at most limit.MaxRate (2^40).
func (r Request) head(set int) int64 {
	h := r.n*maxSets + int64(set)
	switch {
	case r.lease:
		return -h
	case r.give:
		return giveHead + h
	}
	return h
}

// Short replies of decide.lua, for a decision decided in one step: their
// first value (the long form's is 1 or 0).
const (
	shortAllowed = 2 // then remaining, reset
	shortDenied  = 3 // then remaining, retry, reset
)

// parseReply reads one request's values from a decide script's reply and
// returns how many it took: for a decision 3 or 4 (the short forms) or 6,
// for a lease 7, for a give-back none.
func parseReply(v []int64, req Request, r *Result) (int, error) {
	if req.give {
		return 0, nil
	}
	lease := req.lease
	n := 6
	switch {
	case lease:
		n = 7
	case len(v) > 0 && v[0] == shortAllowed:
		n = 3
	case len(v) > 0 && v[0] == shortDenied:
		n = 4
	}
	if len(v) < n {
		return 0, fmt.Errorf("%w: %d values left, want %d", ErrReply, len(v), n)
	}
	switch {
	case lease:
		if err := parseDecision(v[:6], r); err != nil {
			return 0, err
		}
		r.Granted, r.At = v[0], v[6]
		r.Allowed = v[0] > 0
	case n == 3:
		r.Allowed, r.Remaining = true, v[1]
		r.ResetAfter = time.Duration(v[2]) * time.Microsecond
	case n == 4:
		r.Remaining = v[1]
		r.RetryAfter = time.Duration(v[2]) * time.Microsecond
		r.ResetAfter = time.Duration(v[3]) * time.Microsecond
	default:
		if v[0] != 0 && v[0] != 1 {
			return 0, fmt.Errorf("%w: a decision's first value is %d", ErrReply, v[0])
		}
		if err := parseDecision(v[:6], r); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// decideCall is the decide call of reqs: the distinct sets of their limits
// once, in the order first named, then each request's head and keys.
// There must be at most maxSets requests.
func (s *Store) decideCall(reqs []Request) *call {
	var buf [4][]limit.Limit
	sets := buf[:0]
	var setBuf [64]int
	setOf := setBuf[:0]
	nargs, nkeys := 1+len(reqs), 0
	if s.buckets > 0 {
		nargs += len(reqs) // each request's field
	}
	for _, r := range reqs {
		if r.give {
			nargs++ // its at
		}
		j := slices.IndexFunc(sets, func(ls []limit.Limit) bool { return slices.Equal(ls, r.limits) })
		if j < 0 {
			j = len(sets)
			sets = append(sets, r.limits)
			nargs += 1 + 5*len(r.limits)
		}
		setOf = append(setOf, j)
		nkeys += len(r.limits)
	}
	keys := make([]string, 0, nkeys)
	args := make([]any, 1, nargs)
	args[0] = len(sets)
	for _, ls := range sets {
		args = append(args, len(ls))
		for _, l := range ls {
			args = append(args, s.specArgs(l)...)
		}
	}
	for i, r := range reqs {
		args = append(args, r.head(setOf[i]))
		if s.buckets > 0 {
			args = append(args, fieldOf(r.key))
		}
		if r.give {
			args = append(args, r.at)
		}
		tag := s.tagFor(r.key)
		for _, l := range r.limits {
			keys = append(keys, s.keyFor(tag, r.key, l))
		}
	}
	c := &call{e: entryDecide, keys: keys, args: args}
	if len(reqs) == 1 {
		c.sc = s.script(entryDecide, reqs[0].limits, true)
	} else {
		m := 0
		for _, ls := range sets {
			m |= mask(ls)
		}
		c.sc = s.scripts.eval[entryDecide][m]
	}
	return c
}

// callOf is the call of one request req (one, a slice holding just it):
// a lease goes to its own entry point, anything else to decide.
func (s *Store) callOf(req Request, one []Request) *call {
	if req.lease {
		return s.entryCall(entryLease, req, req.n)
	}
	return s.decideCall(one)
}

// entryCall is the call of entry e for req's key and limits, after the
// arguments head.
func (s *Store) entryCall(e entry, req Request, head ...any) *call {
	return s.tagCall(e, s.tagFor(req.key), req.key, req.limits, head...)
}

// tagCall is the call of entry e, one request for key, for the keys of
// limits under hash tag tag (tagFor of a user key, or the probe's
// reserved tag), after the arguments head; in the compact layout, key,
// the request's field, ends the arguments of every entry but decide,
// whose caller appends it after the request's head.
func (s *Store) tagCall(e entry, tag, key string, limits []limit.Limit, head ...any) *call {
	keys := make([]string, 0, len(limits))
	args := append(head, len(limits))
	for _, l := range limits {
		keys = append(keys, s.keyFor(tag, key, l))
		args = append(args, s.specArgs(l)...)
	}
	if s.buckets > 0 && e != entryDecide {
		args = append(args, fieldOf(key))
	}
	return &call{e: e, sc: s.script(e, limits, true), keys: keys, args: args}
}

// tagFor is the hash tag of key's Redis keys: key itself, encoded
// (tagOf), or in the compact layout its bucket.
func (s *Store) tagFor(key string) string {
	if s.buckets > 0 {
		return s.bucket(key)
	}
	return tagOf(key)
}

// keyFor is the Redis key of limit l for key under its hash tag tag (see
// compactKey for the compact layout's).
func (s *Store) keyFor(tag, key string, l limit.Limit) string {
	if s.buckets > 0 {
		return s.compactKey(tag, key, l)
	}
	return s.tagged(tag, l)
}

// script returns the script of entry e for requests against limits (see
// scriptSet.script); in the compact layout, take.lua decides a lone token
// bucket only when its state is a field (fielded).
func (s *Store) script(e entry, limits []limit.Limit, one bool) *script {
	if s.buckets > 0 && len(limits) == 1 && !fielded(limits[0]) {
		one = false
	}
	return s.scripts.script(e, limits, one)
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
	if s.buckets > 0 && !fielded(l) {
		alg += keyedFlag
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
	vals, err := s.runInts(ctx, s.callOf(req, []Request{req})).Result()
	if err == nil {
		var n int
		n, err = parseReply(vals, req, &r)
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
	if len(reqs) > maxSets {
		// More requests than one call can name sets for: a call per
		// maxSets of them.
		var first error
		for i := 0; i < len(reqs); i += maxSets {
			j := min(i+maxSets, len(reqs))
			if err := s.DecideMany(ctx, reqs[i:j], out[i:j]); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	for i, r := range reqs {
		out[i] = Result{}
		out[i].Err = r.built()
	}
	idx := runOrder(reqs, out)
	if len(idx) == 0 {
		return nil
	}
	sent := make([]Request, len(idx))
	for j, i := range idx {
		sent[j] = reqs[i]
	}
	vals, err := s.runInts(ctx, s.decideCall(sent)).Result()
	for _, i := range idx {
		if err != nil {
			out[i].Err = err
			continue
		}
		var n int
		n, err = parseReply(vals, reqs[i], &out[i])
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
		for i := range reqs {
			if out[i].Err == nil {
				out[i].Err = err
			}
		}
	}
	return err
}

// runOrder returns the indices of the requests to send (those whose out
// has no error), in the order Redis runs them: give-backs first (their
// units are there for the rest), then decisions, then leases, which take
// what the decisions of their round trip left. A lease never takes units
// that a request sent with it needed: a burst whose requests share a round
// trip with a lease is decided as if the lease came after it.
func runOrder(reqs []Request, out []Result) []int {
	idx := make([]int, 0, len(reqs))
	for class := range 3 {
		for i, r := range reqs {
			if out[i].Err == nil && r.class() == class {
				idx = append(idx, i)
			}
		}
	}
	return idx
}

// class is a request's place in runOrder: 0 give-back, 1 decision, 2 lease.
func (r Request) class() int {
	switch {
	case r.give:
		return 0
	case r.lease:
		return 2
	}
	return 1
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
	for i, r := range reqs {
		out[i] = Result{}
		out[i].Err = r.built()
	}
	calls := make([]sentCall, 0, len(reqs))
	for _, i := range runOrder(reqs, out) {
		r := reqs[i]
		calls = append(calls, sentCall{i: i, c: s.callOf(r, reqs[i:i+1])})
	}
	if len(calls) == 0 {
		return nil
	}
	if s.cl != nil {
		rs := make([]*routed, len(calls))
		for i := range calls {
			rs[i] = s.routedCall(calls[i].c, func(a []any) redis.Cmder { return redis.NewIntSliceCmd(ctx, a...) })
		}
		s.send(ctx, rs)
		for i, r := range rs {
			r.cmd.SetErr(r.err())
			calls[i].cmd = r.cmd.(*redis.IntSliceCmd)
		}
	} else {
		s.pipeline(ctx, calls)
	}
	var firstErr error
	answered := false
	for _, c := range calls {
		vals, err := c.cmd.Result()
		if err != nil {
			out[c.i].Err = err
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		answered = true
		n, err := parseReply(vals, reqs[c.i], &out[c.i])
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

// sentCall is one request's call in a pipeline: its index in the batch,
// the call, and the command sent.
type sentCall struct {
	i   int
	c   *call
	cmd *redis.IntSliceCmd
}

// pipeline sends calls in one pipeline of the client's; commands that met
// a node without their code did not run, and are sent again once it is
// loaded (the library once, each script once).
func (s *Store) pipeline(ctx context.Context, calls []sentCall) {
	send := func(cs []*sentCall) {
		// Errors are read per command.
		_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, c := range cs {
				c.cmd = s.command(c.c, func(a []any) redis.Cmder { return redis.NewIntSliceCmd(ctx, a...) }).(*redis.IntSliceCmd)
				_ = p.Process(ctx, c.cmd)
			}
			return nil
		})
	}
	all := make([]*sentCall, len(calls))
	for i := range calls {
		all[i] = &calls[i]
	}
	send(all)
	var again []*sentCall
	var libTried, libOK bool
	scripts := map[*script]bool{}
	for _, c := range all {
		if !missing(c.cmd) {
			continue
		}
		if isNoFunction(c.cmd.Err()) {
			if !libTried {
				libTried, libOK = true, s.reloadLibrary(ctx)
			}
			if !libOK {
				continue
			}
		}
		if !s.fn.Load() {
			ok, done := scripts[c.c.sc]
			if !done {
				ok = s.rdb.ScriptLoad(ctx, c.c.sc.src).Err() == nil
				scripts[c.c.sc] = ok
			}
			if !ok {
				continue
			}
		}
		again = append(again, c)
	}
	if len(again) > 0 {
		send(again)
	}
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
	return s.runCmd(ctx, s.entryCall(entryGiveBack, req, units, at)).Err()
}

// Peek answers what Decide of a decision of one unit for req's key and
// limits would answer now, charging nothing (req's N and kind are
// ignored). The error is that of the call, also set in Result.Err.
func (s *Store) Peek(ctx context.Context, req Request) (r Result, err error) {
	if r.Err = req.built(); r.Err != nil {
		return r, r.Err
	}
	vals, err := s.runInts(ctx, s.entryCall(entryPeek, req)).Result()
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
	return s.runCmd(ctx, s.entryCall(entryGiveBack, req, units, -1)).Err()
}

// Reset deletes the state of req's limits for its key: the next decision
// starts afresh. The keys share a hash tag, so this is one DEL on one slot;
// in the compact layout, one script call (reset.lua), which deletes the
// key's fields where the server's clock says they are.
func (s *Store) Reset(ctx context.Context, req Request) error {
	if err := req.built(); err != nil {
		return err
	}
	if s.buckets > 0 {
		return s.runCmd(ctx, s.entryCall(entryReset, req)).Err()
	}
	del := make([]any, 1, 1+len(req.limits))
	del[0] = "del"
	tag := tagOf(req.key)
	for _, l := range req.limits {
		del = append(del, s.tagged(tag, l))
	}
	return s.process(ctx, KeySlot(del[1].(string)), redis.NewIntCmd(ctx, del...))
}
