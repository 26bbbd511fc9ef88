package main

import (
	"context"
	"errors"
	"hash/maphash"
	"io"
	"log/slog"
	"sync/atomic"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/hybridlimit/hybridlimit/hybrid"
)

// systemNames lists the systems compared, in the order they run.
var systemNames = []string{"hybridlimit", "redis_rate"}

// system is one rate-limiting implementation under test.
type system interface {
	// allow decides one request for key, made by goroutine g as its i-th.
	allow(ctx context.Context, g, i int, key string) (bool, error)
	// counters returns the round trips to Redis so far and the decisions
	// so far by source name.
	counters() (calls int64, sources map[string]int64)
	close() error
}

// newSystem builds the named system over the cluster's nodes.
func newSystem(name string, cl *cluster, w workload, s settings, stderr io.Writer) (system, error) {
	if name == "redis_rate" {
		return newRedisRate(cl, w, s), nil
	}
	return newHybrid(cl, w, s, stderr)
}

// hybridSystem is -instances Limiters over the same nodes; requests go to
// them round-robin, as a load balancer would spread them.
type hybridSystem struct {
	lims  []*hybrid.Limiter
	limit hybrid.Limit
}

var _ system = (*hybridSystem)(nil)

func newHybrid(cl *cluster, w workload, s settings, stderr io.Writer) (*hybridSystem, error) {
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	h := &hybridSystem{limit: w.limit}
	for range s.instances {
		lim, err := hybrid.New(hybrid.Config{Addrs: cl.addrs, Logger: log})
		if err != nil {
			return nil, errors.Join(err, h.close())
		}
		h.lims = append(h.lims, lim)
	}
	return h, nil
}

func (h *hybridSystem) allow(ctx context.Context, g, i int, key string) (bool, error) {
	r, err := h.lims[(g+i)%len(h.lims)].Allow(ctx, key, h.limit)
	return r.Allowed, err
}

func (h *hybridSystem) counters() (int64, map[string]int64) {
	var calls int64
	sources := map[string]int64{}
	for _, lim := range h.lims {
		st := lim.Stats()
		for _, n := range st.Nodes {
			calls += n.Calls
		}
		for src, n := range st.Decisions {
			sources[src.String()] += n
		}
	}
	return calls, sources
}

func (h *hybridSystem) close() error {
	var errs []error
	for _, lim := range h.lims {
		errs = append(errs, lim.Close())
	}
	return errors.Join(errs...)
}

// redisRateSystem is go-redis/redis_rate, the per-request Redis design:
// one redis_rate.Limiter per node client, every decision one script call.
// Keys are routed to nodes by maphash of the key modulo the node count,
// not by hybrid's consistent-hash ring: which key lands on which node
// differs, but with the same key mix the load per node is the same.
type redisRateSystem struct {
	seed    maphash.Seed
	clients []*redis.Client
	lims    []*redis_rate.Limiter
	limit   redis_rate.Limit
	calls   atomic.Int64 // Allow calls made, each one round trip
}

var _ system = (*redisRateSystem)(nil)

func newRedisRate(cl *cluster, w workload, s settings) *redisRateSystem {
	r := &redisRateSystem{
		seed:  maphash.MakeSeed(),
		limit: redis_rate.Limit{Rate: int(w.limit.Rate), Burst: int(w.limit.Capacity()), Period: w.limit.Period},
	}
	for _, a := range cl.addrs {
		c := newClient(a, s.concurrency)
		r.clients = append(r.clients, c)
		r.lims = append(r.lims, redis_rate.NewLimiter(c))
	}
	return r
}

func (r *redisRateSystem) allow(ctx context.Context, _, _ int, key string) (bool, error) {
	n := maphash.String(r.seed, key) % uint64(len(r.lims))
	r.calls.Add(1)
	res, err := r.lims[n].Allow(ctx, key, r.limit)
	if err != nil {
		return false, err
	}
	return res.Allowed > 0, nil
}

// counters reports one round trip per decision, all decided remotely:
// redis_rate runs one script per call (EVALSHA; the first call per node
// also sends an EVAL, not counted).
func (r *redisRateSystem) counters() (int64, map[string]int64) {
	n := r.calls.Load()
	return n, map[string]int64{"remote": n}
}

func (r *redisRateSystem) close() error {
	var errs []error
	for _, c := range r.clients {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
