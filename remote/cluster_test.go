package remote

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
	"github.com/hybridlimit/hybridlimit/limit"
)

// TestDecidePipelineOneShardDown: on a real 3-master cluster with one
// master killed (cluster-require-full-coverage no), a pipeline mixing the
// shards answers the live shards' requests, gives the dead shard's their
// own error, and returns nil for the call: the node as a whole is not
// failing (it returned the first command's error before, so a node's
// breaker counted a whole cluster down for one shard).
func TestDecidePipelineOneShardDown(t *testing.T) {
	c := redistest.StartCluster(t, 3, 0, redistest.WithArgs("--cluster-require-full-coverage", "no"))
	rdb := redis.NewClusterClient(BoundClusterOptions(&redis.ClusterOptions{Addrs: c.Addrs()}))
	defer rdb.Close()
	s, err := New(rdb, Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var reqs []Request
	var owner []int
	for i := range 60 {
		k := "k" + strconv.Itoa(i)
		reqs = append(reqs, req(k, 1, []limit.Limit{limit.PerMinute(100), limit.PerHour(1000)}))
		owner = append(owner, c.MasterOf(t, "{"+k+"}"))
	}
	out := make([]Result, len(reqs))
	if err := s.DecideBatch(ctx, reqs, out); err != nil {
		t.Fatalf("healthy cluster: %v", err)
	}
	if err := c.Masters[2].Kill(); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	t0 := time.Now()
	err = s.DecideBatch(cctx, reqs, out)
	t.Logf("DecideBatch with one shard down took %v", time.Since(t0))
	if err != nil {
		t.Errorf("DecideBatch with one shard down = %v, want nil (the others answered)", err)
	}
	for i, r := range out {
		switch {
		case owner[i] == 2 && r.Err == nil:
			t.Errorf("request %d on the dead shard: no error", i)
		case owner[i] != 2 && (r.Err != nil || !r.Allowed || r.Remaining != 98):
			t.Errorf("request %d on a live shard: %+v, want allowed with 98 left", i, r)
		}
	}
}
