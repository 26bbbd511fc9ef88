package redistest

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// UsedCPU is the CPU time the server behind c has used: INFO cpu's
// used_cpu_user plus used_cpu_sys. It fails where INFO is refused (an ACL
// user without it) or answers otherwise (miniredis has no INFO cpu).
func UsedCPU(ctx context.Context, c redis.Cmdable) (time.Duration, error) {
	info, err := c.InfoMap(ctx, "cpu").Result()
	if err != nil {
		return 0, fmt.Errorf("INFO cpu: %w", err)
	}
	var sum float64
	for _, f := range []string{"used_cpu_user", "used_cpu_sys"} {
		v, err := strconv.ParseFloat(info["CPU"][f], 64)
		if err != nil {
			return 0, fmt.Errorf("INFO cpu: %s %q", f, info["CPU"][f])
		}
		sum += v
	}
	return time.Duration(sum * float64(time.Second)), nil
}

// UsedMemory is the memory the server uses, INFO memory's used_memory, in
// bytes.
func UsedMemory(ctx context.Context, c redis.Cmdable) (int64, error) {
	info, err := c.InfoMap(ctx, "memory").Result()
	if err != nil {
		return 0, fmt.Errorf("INFO memory: %w", err)
	}
	n, err := strconv.ParseInt(info["Memory"]["used_memory"], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("INFO memory: used_memory %q", info["Memory"]["used_memory"])
	}
	return n, nil
}
