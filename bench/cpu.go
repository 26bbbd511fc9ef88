package main

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
)

// targetRate is the service's target, decisions/s, for the capacity line.
const targetRate = 500_000

// processCPU is the CPU time this process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// redisCPU is the CPU time the nodes have used, user and system (INFO
// cpu), summed over every running server, an embedded cluster's replicas
// too. ok is false on miniredis, and when INFO cpu fails (not Redis, or an
// ACL user without INFO), which is said once on stderr.
func (e *env) redisCPU(ctx context.Context) (total time.Duration, ok bool) {
	opts, ok := e.redisServers()
	if !ok {
		return 0, false
	}
	for _, o := range opts {
		d, err := call(ctx, o, func(ctx context.Context, c *redis.Client) (time.Duration, error) { return redistest.UsedCPU(ctx, c) })
		total += d
		if err != nil && !e.cpuWarned {
			e.cpuWarned = true
			fmt.Fprintf(e.stderr, "bench: no Redis CPU figures: bench: on %s: %v\n", o.Addr, err)
		}
		if err != nil {
			return 0, false
		}
	}
	return total, true
}

// redisMemory is the memory the nodes use (INFO memory's used_memory),
// summed over the same servers as redisCPU; ok is false where redisCPU's
// is.
func (e *env) redisMemory(ctx context.Context) (total int64, ok bool) {
	opts, ok := e.redisServers()
	if !ok {
		return 0, false
	}
	for _, o := range opts {
		n, err := call(ctx, o, func(ctx context.Context, c *redis.Client) (int64, error) { return redistest.UsedMemory(ctx, c) })
		if err != nil {
			return 0, false
		}
		total += n
	}
	return total, true
}

// redisServers are the options of every running server of the nodes, an
// embedded cluster's replicas too; ok is false on miniredis.
func (e *env) redisServers() (opts []*redis.Options, ok bool) {
	cl := e.cl
	if len(cl.minis) > 0 {
		return nil, false
	}
	if cl.rc == nil {
		return cl.opts, true
	}
	for _, s := range cl.rc.Servers() {
		if s.Running() {
			opts = append(opts, &redis.Options{Addr: s.Addr()})
		}
	}
	return opts, true
}

// cores is how many cores a cost of us µs per decision takes at targetRate.
func cores(us float64) float64 { return us * targetRate / 1e6 }
