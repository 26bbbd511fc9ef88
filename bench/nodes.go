package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
)

// Embedded nodes: numNodes independent ones, or -cluster's masters and replicas.
const (
	numNodes        = 3
	clusterMasters  = 3
	clusterReplicas = 1
)

// housekeepingTimeout bounds one housekeeping command (PING, INFO, a SCAN page...).
const housekeepingTimeout = 5 * time.Second

// cluster is the nodes a run uses: embedded ones it started, or -nodes'.
type cluster struct {
	names    []string         // names on hybrid's ring (nodeName); "cluster" with -cluster
	opts     []*redis.Options // each node's options; with -cluster the masters' at the start
	kind     string           // "redis-server 7.0.15", "miniredis", or the versions of -nodes
	reason   string           // why miniredis, when it is
	external bool             // given with -nodes: never flushed, only our keys deleted

	servers []*redistest.Server    // embedded redis-server nodes, by index
	minis   []*miniredis.Miniredis // embedded miniredis nodes, by index

	rc    *redistest.Cluster // the embedded -cluster; nil otherwise
	seeds []string           // -cluster: the addresses a cluster client starts from
	seed  *redis.Options     // -cluster: the nodes' credentials and TLS (Addr unused)
}

// openNodes starts the embedded nodes s asks for, or checks those of
// -nodes. On error it stops what it started.
func openNodes(ctx context.Context, s settings, mini bool) (cl *cluster, err error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("bench: interrupted: %w", err)
	}
	cl = &cluster{}
	defer func() {
		if err != nil {
			err = errors.Join(err, cl.close(context.Background()))
			cl = nil
		}
	}()
	switch {
	case s.nodes != nil && s.cluster:
		err = cl.connectCluster(ctx, s.nodes)
	case s.nodes != nil:
		err = cl.connect(ctx, s.nodes)
	case s.cluster:
		cl.rc, err = redistest.LaunchCluster(clusterMasters, clusterReplicas)
		if err != nil {
			return cl, fmt.Errorf("bench: -cluster: %w", err)
		}
		cl.seeds, cl.seed, cl.names = cl.rc.Addrs(), &redis.Options{}, []string{"cluster"}
		for _, a := range cl.seeds {
			cl.opts = append(cl.opts, &redis.Options{Addr: a})
		}
	default:
		err = cl.launch(ctx, mini)
	}
	if err != nil || cl.kind != "" {
		return cl, err
	}
	v, err := cl.version(ctx, 0)
	cl.kind = "redis-server " + v
	return cl, err
}

// launch starts numNodes embedded nodes, miniredis if mini or without redis-server.
func (cl *cluster) launch(ctx context.Context, mini bool) error {
	switch {
	case mini:
		cl.reason = miniredisEnv + " set"
	case !redistest.Available():
		cl.reason = "redis-server not found"
	}
	for range numNodes {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("bench: interrupted: %w", err)
		}
		var addr string
		if cl.reason != "" {
			m, err := miniredis.Run()
			if err != nil {
				return fmt.Errorf("bench: starting miniredis: %w", err)
			}
			cl.minis, addr, cl.kind = append(cl.minis, m), m.Addr(), "miniredis"
		} else {
			srv, err := redistest.Launch()
			if err != nil {
				return fmt.Errorf("bench: %w", err)
			}
			cl.servers, addr = append(cl.servers, srv), srv.Addr()
		}
		cl.names, cl.opts = append(cl.names, addr), append(cl.opts, &redis.Options{Addr: addr})
	}
	return nil
}

// connect checks that each independent node of -nodes answers PING.
func (cl *cluster) connect(ctx context.Context, opts []*redis.Options) error {
	cl.opts = opts
	var kinds []string
	for i, o := range opts {
		cl.names = append(cl.names, nodeName(o))
		if _, err := call(ctx, o, func(ctx context.Context, c *redis.Client) (string, error) { return c.Ping(ctx).Result() }); err != nil {
			return fmt.Errorf("bench: node %s: PING: %w", cl.names[i], err)
		}
		k := "redis (version unknown)"
		if v, err := cl.version(ctx, i); err == nil {
			k = "redis-server " + v
		}
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	cl.kind, cl.external = strings.Join(kinds, ", "), true
	return nil
}

// connectCluster checks -cluster -nodes: the first seed to answer must
// report cluster_state:ok, and the masters serving its slots must answer.
func (cl *cluster) connectCluster(ctx context.Context, opts []*redis.Options) error {
	cl.seed, cl.names = opts[0], []string{"cluster"}
	for _, o := range opts {
		cl.seeds = append(cl.seeds, o.Addr)
	}
	var errs []error
	for _, o := range opts {
		info, err := call(ctx, o, func(ctx context.Context, c *redis.Client) (string, error) { return c.ClusterInfo(ctx).Result() })
		switch {
		case err != nil && strings.Contains(err.Error(), "cluster support disabled"):
			return fmt.Errorf("bench: -cluster -nodes: %s is not in cluster mode (cluster-enabled no); give -nodes without -cluster for independent nodes", o.Addr)
		case err != nil:
			errs = append(errs, fmt.Errorf("bench: -cluster -nodes: %s: CLUSTER INFO: %w", o.Addr, err))
			continue
		case !strings.Contains(info, "cluster_state:ok"):
			return fmt.Errorf("bench: -cluster -nodes: %s: the cluster is not ok (%s)", o.Addr, firstLine(info))
		}
		break
	}
	if len(errs) == len(opts) {
		return errors.Join(errs...)
	}
	masters, err := cl.masters(ctx)
	if err != nil {
		return fmt.Errorf("bench: -cluster -nodes: %w", err)
	}
	cl.opts, cl.external = masters, true
	return nil
}

// call runs f with a one-connection client for o, under housekeepingTimeout.
func call[T any](ctx context.Context, o *redis.Options, f func(context.Context, *redis.Client) (T, error)) (T, error) {
	c := newClient(o, 1)
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, housekeepingTimeout)
	defer cancel()
	return f(ctx, c)
}

// clusterOptions has pool connections per server; TLS verifies the host dialled.
func (cl *cluster) clusterOptions(pool int) *redis.ClusterOptions {
	o := &redis.ClusterOptions{Addrs: cl.seeds, Username: cl.seed.Username, Password: cl.seed.Password, PoolSize: pool}
	if cl.seed.TLSConfig != nil {
		o.TLSConfig = cl.seed.TLSConfig.Clone()
		o.TLSConfig.ServerName = ""
	}
	return o
}

// masters returns the masters serving the slots now (also after a
// failover), in address order.
func (cl *cluster) masters(ctx context.Context) ([]*redis.Options, error) {
	addrs := cl.seeds
	seen := map[string]bool{} // masters listed; a killed embedded one holds nothing that outlives the run
	if cl.rc != nil {
		addrs = nil
		for _, s := range cl.rc.Servers() {
			seen[s.Addr()] = !s.Running()
			if s.Running() {
				addrs = append(addrs, s.Addr())
			}
		}
	}
	errs := []error{errors.New("no node of the cluster answered")}
	for _, a := range addrs {
		o := *cl.seed
		o.Addr = a
		slots, err := call(ctx, &o, func(ctx context.Context, c *redis.Client) ([]redis.ClusterSlot, error) {
			//lint:ignore SA1019 CLUSTER SHARDS needs Redis 7; CLUSTER SLOTS answers on every version we support
			return c.ClusterSlots(ctx).Result()
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("CLUSTER SLOTS on %s: %w", a, err))
			continue
		}
		host, _, _ := net.SplitHostPort(a)
		var out []*redis.Options
		for _, s := range slots {
			if len(s.Nodes) == 0 {
				continue
			}
			m := s.Nodes[0].Addr
			if h, p, err := net.SplitHostPort(m); err == nil && (h == "" || h == "?") {
				m = net.JoinHostPort(host, p) // the node does not know its own IP
			}
			if !seen[m] {
				seen[m] = true
				mo := *cl.seed
				mo.Addr = m
				out = append(out, &mo)
			}
		}
		if out == nil {
			return nil, fmt.Errorf("CLUSTER SLOTS on %s: no master serves a slot", a)
		}
		slices.SortFunc(out, func(x, y *redis.Options) int { return strings.Compare(x.Addr, y.Addr) })
		return out, nil
	}
	return nil, errors.Join(errs...)
}

// version asks node i for its redis_version.
func (cl *cluster) version(ctx context.Context, i int) (string, error) {
	info, err := call(ctx, cl.opts[i], func(ctx context.Context, c *redis.Client) (map[string]map[string]string, error) {
		return c.InfoMap(ctx, "server").Result()
	})
	v := info["Server"]["redis_version"]
	if err == nil && v == "" {
		err = errors.New("no redis_version")
	}
	if err != nil {
		return "", fmt.Errorf("bench: INFO server on %s: %w", nodeName(cl.opts[i]), err)
	}
	return v, nil
}

// describe is the report's first line: "nodes: 3 redis-server 7.0.15 on ...".
func (cl *cluster) describe() string {
	switch {
	case cl.rc != nil:
		return fmt.Sprintf("nodes: a Redis Cluster (%s) of %d masters on %s, %d replica each", cl.kind, len(cl.seeds), strings.Join(cl.seeds, ", "), clusterReplicas)
	case cl.seed != nil:
		masters := make([]string, len(cl.opts))
		for i, o := range cl.opts {
			masters[i] = o.Addr
		}
		return fmt.Sprintf("nodes: a Redis Cluster (%s) of %d masters on %s (seeds %s given with -nodes)", cl.kind, len(masters), strings.Join(masters, ", "), strings.Join(cl.seeds, ", "))
	case cl.external:
		return fmt.Sprintf("nodes: %d %s on %s (given with -nodes)", len(cl.names), cl.kind, strings.Join(cl.names, ", "))
	case cl.reason != "":
		return fmt.Sprintf("nodes: %d %s on %s (%s)", len(cl.names), cl.kind, strings.Join(cl.names, ", "), cl.reason)
	}
	return fmt.Sprintf("nodes: %d %s on %s", len(cl.names), cl.kind, strings.Join(cl.names, ", "))
}

// close stops every embedded node, also after a partial start; on -nodes
// and on a cluster it first deletes the keys this process wrote.
func (cl *cluster) close(ctx context.Context) error {
	var errs []error
	if cl.external || cl.rc != nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		errs = append(errs, cl.deleteOwn(ctx))
	}
	for _, s := range cl.servers {
		errs = append(errs, s.Close())
	}
	for _, m := range cl.minis {
		m.Close()
	}
	if cl.rc != nil {
		errs = append(errs, cl.rc.Close())
	}
	cl.servers, cl.minis, cl.rc = nil, nil, nil
	return errors.Join(errs...)
}

// holders are the nodes holding data now: a cluster's masters, else all.
func (cl *cluster) holders(ctx context.Context) ([]*redis.Options, error) {
	if cl.seed == nil {
		return cl.opts, nil
	}
	return cl.masters(ctx)
}

// flush empties the nodes before a run: FLUSHALL on embedded nodes; on
// -nodes only the keys of this process (ownPatterns) are deleted.
func (cl *cluster) flush(ctx context.Context) error {
	if cl.external {
		return cl.deleteOwn(ctx)
	}
	opts, err := cl.holders(ctx)
	for _, o := range opts {
		if _, err := call(ctx, o, func(ctx context.Context, c *redis.Client) (string, error) { return c.FlushAll(ctx).Result() }); err != nil {
			return fmt.Errorf("FLUSHALL on %s: %w", nodeName(o), err)
		}
	}
	return err
}

// deleteOwn deletes the keys matching ownPatterns on every holder.
func (cl *cluster) deleteOwn(ctx context.Context) error {
	opts, err := cl.holders(ctx)
	if err != nil {
		return fmt.Errorf("deleting bench's keys on the cluster: %w", err)
	}
	var errs []error
	for _, o := range opts {
		c := newClient(o, 1)
		for _, pat := range ownPatterns() {
			if err := deleteMatching(ctx, c, pat); err != nil {
				errs = append(errs, fmt.Errorf("deleting %s on %s: %w", pat, nodeName(o), err))
				break
			}
		}
		c.Close()
	}
	return errors.Join(errs...)
}

// deleteMatching deletes the keys matching pattern, a SCAN page at a time,
// a bounded number of pages. One UNLINK per key, pipelined: one UNLINK
// of keys in different slots fails with CROSSSLOT on a cluster.
func deleteMatching(ctx context.Context, c *redis.Client, pattern string) error {
	var cursor uint64
	for range 1_000_000 {
		sctx, cancel := context.WithTimeout(ctx, housekeepingTimeout)
		keys, next, err := c.Scan(sctx, cursor, pattern, 1000).Result()
		if err == nil && len(keys) > 0 {
			_, err = c.Pipelined(sctx, func(p redis.Pipeliner) error {
				for _, k := range keys {
					p.Unlink(sctx, k)
				}
				return nil
			})
		}
		cancel()
		if err != nil {
			return err
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
	return errors.New("too many SCAN pages")
}

// newClient is a plain Redis 7 client for o: no maintenance notifications or SETINFO.
func newClient(o *redis.Options, pool int) *redis.Client {
	c := *o
	c.PoolSize = pool
	c.DisableIdentity = true
	c.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	return redis.NewClient(&c)
}

// kill, pause, resume and restart are the faults of embedded node i
// (redistest.Server). miniredis cannot be frozen: pause closes it and
// resume restarts it with its data; restart also empties it.
func (cl *cluster) kill(i int) error {
	if cl.servers != nil {
		return cl.servers[i].Kill()
	}
	cl.minis[i].Close()
	return nil
}

func (cl *cluster) pause(i int) error {
	if cl.servers != nil {
		return cl.servers[i].Pause()
	}
	return cl.kill(i)
}

func (cl *cluster) resume(i int) error {
	if cl.servers != nil {
		return cl.servers[i].Resume()
	}
	return cl.minis[i].Restart()
}

func (cl *cluster) restart(ctx context.Context, i int) error {
	if cl.servers != nil {
		return cl.servers[i].Restart()
	}
	m := cl.minis[i]
	m.Close()
	if err := m.Restart(); err != nil {
		return err
	}
	m.FlushAll()
	_, err := call(ctx, cl.opts[i], func(ctx context.Context, c *redis.Client) (string, error) { return c.ScriptFlush(ctx).Result() })
	return err
}
