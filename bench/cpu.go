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
	cl := e.cl
	if len(cl.minis) > 0 {
		return 0, false
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

// cores is how many cores a cost of us µs per decision takes at targetRate.
func cores(us float64) float64 { return us * targetRate / 1e6 }
