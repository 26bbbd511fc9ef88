package main

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
)

// targetRate is the decisions per second the capacity line plans for: the
// service's target (500,000 decisions/s over 10 M clients).
const targetRate = 500_000

// processCPU is the CPU time this process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// redisCPU is the CPU time the nodes have used (INFO cpu, used_cpu_user
// plus used_cpu_sys, summed over the nodes: every server of an embedded
// Redis Cluster, replicas too, as replication is part of the cost). ok is
// false for miniredis, which runs in this process and has no INFO cpu.
func (cl *cluster) redisCPU(ctx context.Context) (total time.Duration, ok bool, err error) {
	if len(cl.minis) > 0 {
		return 0, false, nil
	}
	opts := cl.opts
	if cl.rc != nil {
		opts = nil
		for _, s := range cl.rc.Servers() {
			if s.Running() {
				opts = append(opts, &redis.Options{Addr: s.Addr()})
			}
		}
	}
	for _, o := range opts {
		err := call(ctx, o, func(ctx context.Context, c *redis.Client) error {
			d, err := redistest.UsedCPU(ctx, c)
			total += d
			return err
		})
		if err != nil {
			return 0, false, fmt.Errorf("bench: on %s: %w", o.Addr, err)
		}
	}
	return total, true, nil
}

// redisCPU is cl.redisCPU, saying once on stderr why the nodes' CPU
// cannot be read when INFO cpu fails (a node that is not Redis, or an ACL
// user without INFO): the result then has no Redis CPU figure.
func (e *env) redisCPU(ctx context.Context) (time.Duration, bool) {
	d, ok, err := e.cl.redisCPU(ctx)
	if err != nil && !e.cpuWarned {
		e.cpuWarned = true
		fmt.Fprintf(e.stderr, "bench: no Redis CPU figures: %v\n", err)
	}
	return d, ok && err == nil
}

// cores is how many cores a cost of us µs per decision takes at the
// target rate.
func cores(us float64) float64 { return us * targetRate / 1e6 }
