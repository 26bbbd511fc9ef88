package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/hybridlimit/hybridlimit/internal/redistest"
)

// numNodes is how many Redis nodes the bench starts.
const numNodes = 3

// cluster is the set of embedded nodes: real redis-server processes or
// in-process miniredis servers, all on 127.0.0.1.
type cluster struct {
	addrs  []string
	kind   string // "redis-server 7.0.15" or "miniredis"
	reason string // why miniredis, when it is
	stop   []func() error
}

// startCluster starts numNodes nodes: redis-server through
// redistest.Launch when it is installed and mini is false, miniredis
// otherwise. On error it stops what it started.
func startCluster(ctx context.Context, mini bool) (cl *cluster, err error) {
	cl = &cluster{}
	defer func() {
		if err != nil {
			err = errors.Join(err, cl.close())
			cl = nil
		}
	}()
	switch {
	case mini:
		cl.reason = miniredisEnv + " set"
	case !redistest.Available():
		cl.reason = "redis-server not found"
	}
	for range numNodes {
		if cl.reason != "" {
			m, err := miniredis.Run()
			if err != nil {
				return cl, fmt.Errorf("bench: starting miniredis: %w", err)
			}
			cl.stop = append(cl.stop, func() error { m.Close(); return nil })
			cl.addrs = append(cl.addrs, m.Addr())
			continue
		}
		srv, err := redistest.Launch()
		if err != nil {
			return cl, fmt.Errorf("bench: %w", err)
		}
		cl.stop = append(cl.stop, srv.Close)
		cl.addrs = append(cl.addrs, srv.Addr())
	}
	if cl.reason != "" {
		cl.kind = "miniredis"
		return cl, nil
	}
	c := newClient(cl.addrs[0], 1)
	defer c.Close()
	info, err := c.InfoMap(ctx, "server").Result()
	if err != nil {
		return cl, fmt.Errorf("bench: INFO server on %s: %w", cl.addrs[0], err)
	}
	cl.kind = "redis-server " + info["Server"]["redis_version"]
	return cl, nil
}

// describe is the first line of the report, for example
// "nodes: 3 redis-server 7.0.15 on 127.0.0.1:40001, 127.0.0.1:40002, ...".
func (cl *cluster) describe() string {
	s := fmt.Sprintf("nodes: %d %s on %s", len(cl.addrs), cl.kind, strings.Join(cl.addrs, ", "))
	if cl.reason != "" {
		s += " (" + cl.reason + ")"
	}
	return s
}

// close stops every node, also after a partial start.
func (cl *cluster) close() error {
	var errs []error
	for _, stop := range cl.stop {
		errs = append(errs, stop())
	}
	cl.stop = nil
	return errors.Join(errs...)
}

// flush empties every node, so that each run starts from fresh buckets.
func (cl *cluster) flush(ctx context.Context) error {
	for _, a := range cl.addrs {
		c := newClient(a, 1)
		err := c.FlushAll(ctx).Err()
		c.Close()
		if err != nil {
			return fmt.Errorf("FLUSHALL on %s: %w", a, err)
		}
	}
	return nil
}

// newClient returns a client for the redis_rate side and for
// housekeeping: plain Redis 7, so maintenance notifications and CLIENT
// SETINFO are off.
func newClient(addr string, pool int) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:            addr,
		PoolSize:        pool,
		DisableIdentity: true,
		MaintNotificationsConfig: &maintnotifications.Config{
			Mode: maintnotifications.ModeDisabled,
		},
	})
}
