package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The routine operations of a Redis Cluster, done as its operators do them:
// redis-cli --cluster reshard, add-node and rebalance, and CLUSTER FAILOVER
// on a replica. They need redis-cli (Debian's redis-tools, which
// redis-server depends on).

// cliEnv names the environment variable that overrides the redis-cli path.
const cliEnv = "REDIS_CLI_BIN"

// ErrCLINotFound is returned, wrapped, by the operations that run redis-cli
// when none can be found: at REDIS_CLI_BIN, beside redis-server, or on PATH.
var ErrCLINotFound = errors.New("redistest: redis-cli not found")

// cliTimeout bounds one redis-cli --cluster command.
const cliTimeout = 2 * time.Minute

// CLI returns the redis-cli to run: REDIS_CLI_BIN if set, else the one
// beside redis-server, else redis-cli on PATH.
func CLI() (string, error) {
	if bin := os.Getenv(cliEnv); bin != "" {
		return exec.LookPath(bin)
	}
	if srv, err := binary(); err == nil {
		p := filepath.Join(filepath.Dir(srv), "redis-cli")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath("redis-cli")
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrCLINotFound, err)
	}
	return p, nil
}

// RequireCLI skips tb when redis-cli is missing, or fails it under CI=true,
// as Start does for redis-server.
func RequireCLI(tb testing.TB) {
	tb.Helper()
	if _, err := CLI(); err != nil {
		if inCI() {
			tb.Fatalf("redis-cli not found; CI must install it (apt-get install redis-tools): %v", err)
		}
		tb.Skipf("redis-cli not found (%v)", err)
	}
}

// cli runs redis-cli with args (after the password, if the cluster has
// one) and returns its output; an error holds the output's tail.
func (c *Cluster) cli(ctx context.Context, args ...string) (string, error) {
	bin, err := CLI()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, cliTimeout)
	defer cancel()
	if p := c.Masters[0].pass; p != "" {
		args = append([]string{"-a", p, "--no-auth-warning"}, args...)
	}
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("redistest: redis-cli %s: %w: %s", strings.Join(args, " "), err, tail(out, 2000))
	}
	// redis-cli --cluster reports some failures on stdout with status 0.
	if i := strings.Index(string(out), "[ERR]"); i >= 0 {
		return string(out), fmt.Errorf("redistest: redis-cli %s: %s", strings.Join(args, " "), tail(out[i:], 2000))
	}
	return string(out), nil
}

// opClient is a short-lived client for one member.
func (s *Server) opClient() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: s.Addr(), Password: s.pass, DialTimeout: time.Second, ReadTimeout: 5 * time.Second})
}

// ID returns the member's cluster node id (CLUSTER MYID).
func (c *Cluster) ID(ctx context.Context, s *Server) (string, error) {
	cl := s.opClient()
	defer cl.Close()
	return cl.Do(ctx, "CLUSTER", "MYID").Text()
}

// Reshard moves slots slots from master from to master to, with
// redis-cli --cluster reshard, keys and all, as an operator does: each
// slot is marked importing and migrating, its keys are MIGRATEd a
// pipeline at a time, then the slot is given to the new owner. Requests
// meanwhile meet ASK, TRYAGAIN and, once a slot has moved, MOVED.
func (c *Cluster) Reshard(ctx context.Context, from, to *Server, slots int) error {
	src, err := c.ID(ctx, from)
	if err != nil {
		return err
	}
	dst, err := c.ID(ctx, to)
	if err != nil {
		return err
	}
	_, err = c.cli(ctx, "--cluster", "reshard", to.Addr(), "--cluster-from", src, "--cluster-to", dst,
		"--cluster-slots", strconv.Itoa(slots), "--cluster-yes")
	return err
}

// AddMaster starts a new member and joins it to the cluster as a master
// with no slots (redis-cli --cluster add-node, which waits until the
// cluster agrees). It is appended to Masters, with no replicas, and is
// closed with the cluster.
func (c *Cluster) AddMaster(ctx context.Context) (*Server, error) {
	s, _, err := c.launchMember()
	if err != nil {
		return nil, err
	}
	c.Masters = append(c.Masters, s)
	c.Replicas = append(c.Replicas, nil)
	if _, err := c.cli(ctx, "--cluster", "add-node", s.Addr(), c.Masters[0].Addr()); err != nil {
		return s, err
	}
	// The new master must also have learned the slots, or it refuses a
	// slot's keys with CLUSTERDOWN when they are migrated to it.
	return s, c.await("every node knows the new master, which reports cluster_state:ok", func(m *Server) bool {
		cl := m.opClient()
		defer cl.Close()
		nodes, err := cl.ClusterNodes(ctx).Result()
		if err != nil || !strings.Contains(nodes, s.Addr()) || strings.Contains(nodes, "handshake") {
			return false
		}
		info, err := cl.ClusterInfo(ctx).Result()
		return err == nil && strings.Contains(info, "cluster_state:ok")
	})
}

// Rebalance evens out the slots over the masters, empty ones included
// (redis-cli --cluster rebalance --cluster-use-empty-masters), moving keys
// as Reshard does.
func (c *Cluster) Rebalance(ctx context.Context) error {
	_, err := c.cli(ctx, "--cluster", "rebalance", c.Masters[0].Addr(), "--cluster-use-empty-masters")
	return err
}

// Failover asks replica to take over from its master (CLUSTER FAILOVER:
// the master stops writes, the replica catches up and is promoted, and the
// old master becomes its replica), and waits until the replica reports
// role:master.
func (c *Cluster) Failover(ctx context.Context, replica *Server) error {
	cl := replica.opClient()
	defer cl.Close()
	if err := cl.Do(ctx, "CLUSTER", "FAILOVER").Err(); err != nil {
		return fmt.Errorf("redistest: CLUSTER FAILOVER on %s: %w", replica.Addr(), err)
	}
	deadline := time.Now().Add(clusterReady)
	for {
		info, err := cl.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "role:master") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redistest: %s not promoted within %v of CLUSTER FAILOVER", replica.Addr(), clusterReady)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Fill writes n keys "filler:<i>" of size bytes each, spread over every
// slot, so that moving slots takes as long as it does on a cluster that
// holds data.
func (c *Cluster) Fill(ctx context.Context, n, size int) error {
	cl := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), Password: c.Masters[0].pass})
	defer cl.Close()
	val := strings.Repeat("x", size)
	const chunk = 5000
	for i := 0; i < n; i += chunk {
		_, err := cl.Pipelined(ctx, func(p redis.Pipeliner) error {
			for j := i; j < min(i+chunk, n); j++ {
				p.Set(ctx, "filler:"+strconv.Itoa(j), val, 0)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("redistest: filling the cluster: %w", err)
		}
	}
	return nil
}

// SlotsOf returns how many slots each master serves now, as the first
// master that answers sees it (CLUSTER SLOTS), by address.
func (c *Cluster) SlotsOf(ctx context.Context) (map[string]int, error) {
	var errs []error
	for _, s := range c.all() {
		if !s.Running() {
			continue
		}
		cl := s.opClient()
		//lint:ignore SA1019 CLUSTER SHARDS needs Redis 7; CLUSTER SLOTS answers on every version we support
		slots, err := cl.ClusterSlots(ctx).Result()
		cl.Close()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out := map[string]int{}
		for _, r := range slots {
			if len(r.Nodes) > 0 {
				out[r.Nodes[0].Addr] += r.End - r.Start + 1
			}
		}
		return out, nil
	}
	return nil, errors.Join(append(errs, errors.New("redistest: no member answered CLUSTER SLOTS"))...)
}
