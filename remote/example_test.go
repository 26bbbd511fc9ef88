package remote_test

import (
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/hybridlimit/hybridlimit/remote"
)

// A single server: bounded timeouts, no retries, whatever the options said.
func ExampleBoundOptions() {
	o := remote.BoundOptions(&redis.Options{Addr: "10.0.0.1:6379", Password: "secret", MaxRetries: 5})
	fmt.Println(o.Addr, o.MaxRetries, o.ReadTimeout)
	// Output: 10.0.0.1:6379 -1 100ms
}

// A Redis Cluster is one node of the ring: the Limiter keeps a breaker per
// master and has the client reload its slot map after failures.
func ExampleBoundClusterOptions() {
	o := remote.BoundClusterOptions(&redis.ClusterOptions{Addrs: []string{"10.0.0.1:7000", "10.0.0.2:7000", "10.0.0.3:7000"}})
	fmt.Println(o.MaxRedirects, o.ClusterStateReloadInterval)
	// Then hybrid.Config{Nodes: []hybrid.Node{{Name: "cluster",
	// Client: redis.NewClusterClient(o)}}}.
	// Output: -1 1s
}

// A Sentinel group: the client follows the master the sentinels name.
func ExampleBoundFailoverOptions() {
	o := remote.BoundFailoverOptions(&redis.FailoverOptions{MasterName: "mymaster", SentinelAddrs: []string{"10.0.0.1:26379", "10.0.0.2:26379"}})
	fmt.Println(o.MasterName, o.MaxRetries)
	// Then hybrid.Config{Nodes: []hybrid.Node{{Name: "mymaster",
	// Client: redis.NewFailoverClient(o)}}}.
	// Output: mymaster -1
}
