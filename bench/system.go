package main

import (
	"context"
	"errors"
	"hash/maphash"
	"log/slog"
	"sync/atomic"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/hybridlimit/hybridlimit/hybrid"
	"github.com/hybridlimit/hybridlimit/remote"
)

// The systems compared; systemNames lists them in the order they run.
const (
	sysHybrid    = "hybridlimit"
	sysRedisRate = "redis_rate"
)

var systemNames = []string{sysHybrid, sysRedisRate}

// system is one rate-limiting implementation under test.
type system interface {
	// allow decides goroutine g's i-th request for key against all of limits.
	allow(ctx context.Context, g, i int, key string, limits []hybrid.Limit) (bool, hybrid.Source, error)
	// calls returns the round trips to Redis so far.
	calls() int64
	close() error
}

// newSystem builds name as every mode but -fault runs it, for a workload of
// keys keys; fraction 0: leases off.
func (e *env) newSystem(name string, fraction float64, keys int) (system, error) {
	if name == sysRedisRate {
		return newRedisRate(e.cl, e.s.concurrency), nil
	}
	h, err := newHybrid(e.cl, e.s.instances, fraction, e.s.layout(keys), e.log, nil)
	if err != nil {
		return nil, err // not a nil *hybridSystem in a non-nil system
	}
	return h, nil
}

// hybridSystem is -instances Limiters with clients of their own, asked round-robin.
type hybridSystem struct {
	lims    []*hybrid.Limiter
	clients []redis.UniversalClient
}

var _ system = (*hybridSystem)(nil)

// newHybrid builds the instances; fraction is Lease.MaxFraction (0: leases
// off), layout how they keep their states. via[i], if not "", is the
// address node i's clients dial instead (a toxiproxy); the node keeps its
// name, so the ring places keys the same.
func newHybrid(cl *cluster, instances int, fraction float64, layout hybrid.Layout, log *slog.Logger, via []string) (*hybridSystem, error) {
	h := &hybridSystem{}
	for range instances {
		cfg := hybrid.Config{Prefix: hybridPrefix, Logger: log, Layout: layout}
		cfg.Lease.Disable, cfg.Lease.MaxFraction = fraction == 0, fraction
		add := func(name string, c redis.UniversalClient) {
			h.clients = append(h.clients, c)
			cfg.Nodes = append(cfg.Nodes, hybrid.Node{Name: name, Client: c})
		}
		if cl.seeds != nil { // the cluster as one node, with a breaker per master
			add(cl.names[0], redis.NewClusterClient(remote.BoundClusterOptions(cl.clusterOptions(0))))
		} else {
			for i, o := range cl.opts {
				if i < len(via) && via[i] != "" {
					p := *o
					p.Addr = via[i]
					o = &p
				}
				add(cl.names[i], remote.NewClient(o))
			}
		}
		lim, err := hybrid.New(cfg)
		if err != nil {
			return nil, errors.Join(err, h.close())
		}
		h.lims = append(h.lims, lim)
	}
	return h, nil
}

// allow decides the request with one AllowN, all its limits at once.
func (h *hybridSystem) allow(ctx context.Context, g, i int, key string, limits []hybrid.Limit) (bool, hybrid.Source, error) {
	r, err := h.lims[(g+i)%len(h.lims)].AllowN(ctx, key, 1, limits...)
	return r.Allowed, r.Source, err
}

func (h *hybridSystem) calls() (n int64) {
	for _, lim := range h.lims {
		for _, nd := range lim.Stats().Nodes {
			n += nd.Calls
		}
	}
	return n
}

// leaseUnits returns the units outstanding in leases now, over instances.
func (h *hybridSystem) leaseUnits() (n int64) {
	for _, lim := range h.lims {
		n += lim.Stats().LeaseUnits
	}
	return n
}

// nodeStats returns the named node's counters per instance (zero if absent).
func (h *hybridSystem) nodeStats(name string) []hybrid.NodeStats {
	out := make([]hybrid.NodeStats, len(h.lims))
	for i, lim := range h.lims {
		for _, nd := range lim.Stats().Nodes {
			if nd.Name == name {
				out[i] = nd
			}
		}
	}
	return out
}

// close closes the Limiters, then the clients they were given.
func (h *hybridSystem) close() error {
	var errs []error
	for _, lim := range h.lims {
		errs = append(errs, lim.Close())
	}
	h.lims = nil
	return errors.Join(append(errs, closeClients(&h.clients))...)
}

// closeClients closes the clients of *cs and forgets them.
func closeClients(cs *[]redis.UniversalClient) error {
	var errs []error
	for _, c := range *cs {
		errs = append(errs, c.Close())
	}
	*cs = nil
	return errors.Join(errs...)
}

// redisRateSystem is go-redis/redis_rate: one redis_rate.Limiter per node
// client, keys placed by maphash modulo the node count (doc.go).
type redisRateSystem struct {
	seed    maphash.Seed
	clients []redis.UniversalClient
	lims    []*redis_rate.Limiter
	n       atomic.Int64 // Allow calls made, each one round trip
}

var _ system = (*redisRateSystem)(nil)

func newRedisRate(cl *cluster, pool int) *redisRateSystem {
	r := &redisRateSystem{seed: maphash.MakeSeed()}
	if cl.seeds != nil {
		r.clients = append(r.clients, redis.NewClusterClient(cl.clusterOptions(pool)))
	} else {
		for _, o := range cl.opts {
			r.clients = append(r.clients, newClient(o, pool))
		}
	}
	for _, c := range r.clients {
		r.lims = append(r.lims, redis_rate.NewLimiter(c))
	}
	return r
}

// allow makes one Allow per limit, in order, each on its own key (limitKey;
// the key alone for one limit), until one denies; those before stay charged.
func (r *redisRateSystem) allow(ctx context.Context, _, _ int, key string, limits []hybrid.Limit) (bool, hybrid.Source, error) {
	lim := r.lims[maphash.String(r.seed, key)%uint64(len(r.lims))]
	for _, l := range limits {
		k := key
		if len(limits) > 1 {
			k = limitKey(key, l)
		}
		r.n.Add(1)
		res, err := lim.Allow(ctx, k, redis_rate.Limit{Rate: int(l.Rate), Burst: int(l.Capacity()), Period: l.Period})
		if err != nil || res.Allowed == 0 {
			return false, hybrid.SourceRemote, err
		}
	}
	return true, hybrid.SourceRemote, nil
}

// limitKey is key+":"+l as -limit spells it ("...:100/m"), in one allocation.
func limitKey(key string, l hybrid.Limit) string {
	var buf [128]byte
	return string(appendLimit(append(append(buf[:0], key...), ':'), l))
}

// calls counts a round trip per Allow (EVALSHA; the first EVAL uncounted).
func (r *redisRateSystem) calls() int64 { return r.n.Load() }

func (r *redisRateSystem) close() error { return closeClients(&r.clients) }
