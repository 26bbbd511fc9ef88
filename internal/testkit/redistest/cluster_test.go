package redistest

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestStartCluster(t *testing.T) {
	c := StartCluster(t, 3, 1)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	defer rdb.Close()
	ctx := context.Background()
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		if err := rdb.Set(ctx, k, "1", 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", k, err)
		}
	}
	shards, err := rdb.ClusterShards(ctx).Result()
	if err != nil || len(shards) != 3 {
		t.Fatalf("CLUSTER SHARDS = %d shards, %v; want 3", len(shards), err)
	}
	for _, sh := range shards {
		if len(sh.Nodes) != 2 {
			t.Errorf("shard %v has %d nodes, want a master and a replica", sh.Slots, len(sh.Nodes))
		}
	}
}
