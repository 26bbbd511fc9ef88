package redistest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Cluster is a Redis Cluster of real redis-server processes on loopback:
// masters that share the 16384 slots evenly, each with its replicas.
type Cluster struct {
	Masters  []*Server
	Replicas [][]*Server // Replicas[i] replicate Masters[i]
}

// clusterReady bounds how long StartCluster waits for the cluster to agree.
const clusterReady = 20 * time.Second

// StartCluster starts masters × (1 + replicas) servers in cluster mode
// (node timeout 1 s, so a failover takes a few seconds), assigns the slots,
// joins them with CLUSTER MEET and CLUSTER REPLICATE (no redis-cli needed),
// and waits until every node reports cluster_state:ok and every replica is
// in sync. The servers stop at the end of the test. Without redis-server it
// skips the test, or fails it under CI=true, as Start does.
func StartCluster(tb testing.TB, masters, replicas int, opts ...Option) *Cluster {
	tb.Helper()
	buses := map[*Server]int{}
	start := func() *Server {
		bus, err := freePort()
		if err != nil {
			tb.Fatal(err)
		}
		o := append([]Option{WithArgs("--cluster-enabled", "yes", "--cluster-node-timeout", "1000",
			"--cluster-port", strconv.Itoa(bus), "--cluster-config-file", "nodes.conf")}, opts...)
		s := Start(tb, o...)
		buses[s] = bus
		return s
	}
	c := &Cluster{}
	for range masters {
		c.Masters = append(c.Masters, start())
	}
	for range masters {
		var rs []*Server
		for range replicas {
			rs = append(rs, start())
		}
		c.Replicas = append(c.Replicas, rs)
	}
	ctx := context.Background()
	first := c.Masters[0].Client(tb)
	for i, m := range c.Masters {
		lo, hi := i*16384/masters, (i+1)*16384/masters-1
		if err := m.Client(tb).Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
			tb.Fatalf("redistest: CLUSTER ADDSLOTSRANGE on %s: %v", m.Addr(), err)
		}
	}
	for _, s := range c.all()[1:] {
		if err := first.Do(ctx, "CLUSTER", "MEET", "127.0.0.1", s.Port(), buses[s]).Err(); err != nil {
			tb.Fatalf("redistest: CLUSTER MEET %s: %v", s.Addr(), err)
		}
	}
	n := len(c.all())
	c.await(tb, "every node knows every other", func(s *Server) bool {
		nodes, err := s.Client(tb).ClusterNodes(ctx).Result()
		return err == nil && strings.Count(strings.TrimSpace(nodes), "\n")+1 == n && !strings.Contains(nodes, "handshake")
	})
	for i, m := range c.Masters {
		id, err := m.Client(tb).Do(ctx, "CLUSTER", "MYID").Text()
		if err != nil {
			tb.Fatal(err)
		}
		for _, r := range c.Replicas[i] {
			if err := r.Client(tb).Do(ctx, "CLUSTER", "REPLICATE", id).Err(); err != nil {
				tb.Fatalf("redistest: CLUSTER REPLICATE on %s: %v", r.Addr(), err)
			}
		}
	}
	c.await(tb, "cluster_state:ok everywhere, replicas in sync", func(s *Server) bool {
		info, err := s.Client(tb).ClusterInfo(ctx).Result()
		if err != nil || !strings.Contains(info, "cluster_state:ok") {
			return false
		}
		repl, err := s.Client(tb).Info(ctx, "replication").Result()
		return err == nil && (strings.Contains(repl, "role:master") || strings.Contains(repl, "master_link_status:up"))
	})
	return c
}

// all returns every server, masters first.
func (c *Cluster) all() []*Server {
	out := append([]*Server(nil), c.Masters...)
	for _, rs := range c.Replicas {
		out = append(out, rs...)
	}
	return out
}

// Addrs returns the masters' addresses, enough to seed a cluster client.
func (c *Cluster) Addrs() []string {
	var out []string
	for _, m := range c.Masters {
		out = append(out, m.Addr())
	}
	return out
}

// await polls ok on every server until it holds on all, or fails tb after
// clusterReady.
func (c *Cluster) await(tb testing.TB, what string, ok func(*Server) bool) {
	tb.Helper()
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
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("redistest: cluster not ready after %v: %s", clusterReady, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// MasterOf returns the index of the master that serves key's slot now, as
// the masters see it, or -1.
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
