package redistest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a Redis Cluster of real redis-server processes on loopback:
// masters that share the 16384 slots evenly, each with its replicas.
// Restarting a member gives it a new, empty run directory, and so a new
// cluster identity: kill, pause and resume members, do not restart them.
type Cluster struct {
	Masters  []*Server   // the masters, each owning a range of slots
	Replicas [][]*Server // Replicas[i] replicate Masters[i]

	opts []Option // every member's, for AddMaster
}

// clusterReady bounds how long LaunchCluster waits for the cluster to agree.
const clusterReady = 20 * time.Second

// LaunchCluster starts masters × (1 + replicas) servers in cluster mode
// (node timeout 1 s, so a failover takes a few seconds), assigns the slots,
// joins them with CLUSTER MEET and CLUSTER REPLICATE (no redis-cli needed),
// and waits until every node reports cluster_state:ok with all 16384
// slots assigned, and every replica is in sync. The caller closes the Cluster. On error it stops what it
// started; without redis-server the error wraps ErrNotFound.
func LaunchCluster(masters, replicas int, opts ...Option) (c *Cluster, err error) {
	c = &Cluster{opts: opts}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Close())
			c = nil
		}
	}()
	buses := map[*Server]int{}
	start := func() (*Server, error) {
		s, bus, err := c.launchMember()
		if err == nil {
			buses[s] = bus
		}
		return s, err
	}
	for range masters {
		s, err := start()
		if err != nil {
			return c, err
		}
		c.Masters = append(c.Masters, s)
	}
	for range masters {
		var rs []*Server
		for range replicas {
			s, err := start()
			if err != nil {
				c.Replicas = append(c.Replicas, rs)
				return c, err
			}
			rs = append(rs, s)
		}
		c.Replicas = append(c.Replicas, rs)
	}
	ctx := context.Background()
	clients := map[*Server]*redis.Client{}
	defer func() {
		for _, cl := range clients {
			cl.Close()
		}
	}()
	client := func(s *Server) *redis.Client {
		if clients[s] == nil {
			clients[s] = redis.NewClient(&redis.Options{Addr: s.Addr(), Password: s.pass, DialTimeout: time.Second, ReadTimeout: time.Second})
		}
		return clients[s]
	}
	for i, m := range c.Masters {
		lo, hi := i*16384/masters, (i+1)*16384/masters-1
		if err := client(m).Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
			return c, fmt.Errorf("redistest: CLUSTER ADDSLOTSRANGE on %s: %w", m.Addr(), err)
		}
	}
	first := client(c.Masters[0])
	for _, s := range c.all()[1:] {
		if err := first.Do(ctx, "CLUSTER", "MEET", "127.0.0.1", s.Port(), buses[s]).Err(); err != nil {
			return c, fmt.Errorf("redistest: CLUSTER MEET %s: %w", s.Addr(), err)
		}
	}
	n := len(c.all())
	if err := c.await("every node knows every other", func(s *Server) bool {
		nodes, err := client(s).ClusterNodes(ctx).Result()
		return err == nil && strings.Count(strings.TrimSpace(nodes), "\n")+1 == n && !strings.Contains(nodes, "handshake")
	}); err != nil {
		return c, err
	}
	for i, m := range c.Masters {
		id, err := client(m).Do(ctx, "CLUSTER", "MYID").Text()
		if err != nil {
			return c, err
		}
		for _, r := range c.Replicas[i] {
			if err := client(r).Do(ctx, "CLUSTER", "REPLICATE", id).Err(); err != nil {
				return c, fmt.Errorf("redistest: CLUSTER REPLICATE on %s: %w", r.Addr(), err)
			}
		}
	}
	// cluster_state:ok alone does not say a node knows every master's
	// slots: with cluster-require-full-coverage no, a node whose gossip
	// has not yet brought it a master's slots says ok too, and its CLUSTER
	// SLOTS leaves them out (a store that loaded its map there found no
	// master for them).
	err = c.await("cluster_state:ok everywhere, every slot known everywhere, replicas in sync", func(s *Server) bool {
		info, err := client(s).ClusterInfo(ctx).Result()
		if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_slots_assigned:16384\r\n") {
			return false
		}
		repl, err := client(s).Info(ctx, "replication").Result()
		return err == nil && (strings.Contains(repl, "role:master") || strings.Contains(repl, "master_link_status:up"))
	})
	return c, err
}

// launchMember starts one server in cluster mode, with a cluster bus port
// of its own, not yet part of any cluster.
func (c *Cluster) launchMember() (*Server, int, error) {
	bus, err := freePort()
	if err != nil {
		return nil, 0, err
	}
	o := append([]Option{WithArgs("--cluster-enabled", "yes", "--cluster-node-timeout", "1000",
		"--cluster-port", strconv.Itoa(bus), "--cluster-config-file", "nodes.conf")}, c.opts...)
	s, err := Launch(o...)
	return s, bus, err
}

// StartCluster is LaunchCluster for a test: the servers stop at its end.
// Without redis-server it skips the test, or fails it under CI=true, as
// Start does.
func StartCluster(tb testing.TB, masters, replicas int, opts ...Option) *Cluster {
	tb.Helper()
	c, err := LaunchCluster(masters, replicas, opts...)
	if errors.Is(err, ErrNotFound) {
		if inCI() {
			tb.Fatalf("redis-server not found on PATH; CI must install it (apt-get install redis-server): %v", err)
		} else {
			tb.Skipf("redis-server not found on PATH (%v)", err)
		}
		return nil
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := c.Close(); err != nil {
			tb.Errorf("redistest: cleanup: %v", err)
		}
	})
	return c
}

// Close stops every server of the cluster.
func (c *Cluster) Close() error {
	var errs []error
	for _, s := range c.all() {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}

// all returns every server, masters first.
func (c *Cluster) all() []*Server {
	out := append([]*Server(nil), c.Masters...)
	for _, rs := range c.Replicas {
		out = append(out, rs...)
	}
	return out
}

// Servers returns every server, masters first, then replicas.
func (c *Cluster) Servers() []*Server { return c.all() }

// Addrs returns the masters' addresses, enough to seed a cluster client.
func (c *Cluster) Addrs() []string {
	var out []string
	for _, m := range c.Masters {
		out = append(out, m.Addr())
	}
	return out
}

// await polls ok on every running server until it holds on all, or
// returns an error after clusterReady.
func (c *Cluster) await(what string, ok func(*Server) bool) error {
	deadline := time.Now().Add(clusterReady)
	for {
		all := true
		for _, s := range c.all() {
			if s.Running() && !ok(s) {
				all = false
				break
			}
		}
		if all {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redistest: cluster not ready after %v: %s", clusterReady, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// MasterOf returns the index of the master that serves key's slot as the
// slots were first assigned (masters in order, equal ranges), or -1 when
// that master is not running.
func (c *Cluster) MasterOf(tb testing.TB, key string) int {
	tb.Helper()
	slot, err := c.Masters[0].Client(tb).ClusterKeySlot(context.Background(), key).Result()
	if err != nil {
		tb.Fatal(err)
	}
	for i, m := range c.Masters {
		lo, hi := int64(i*16384/len(c.Masters)), int64((i+1)*16384/len(c.Masters)-1)
		if slot >= lo && slot <= hi && m.Running() {
			return i
		}
	}
	return -1
}

// String names the cluster's masters.
func (c *Cluster) String() string {
	return fmt.Sprintf("cluster of %d masters %v", len(c.Masters), c.Addrs())
}
