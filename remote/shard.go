package remote

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Sharded reports whether the Store's client is a Redis Cluster client, whose
// keys live on several servers: Shard names the server of a key, and one
// server's failure says nothing of the others'.
func (s *Store) Sharded() bool {
	_, ok := s.rdb.(*redis.ClusterClient)
	return ok
}

// Shard returns the address of the master that serves key's slot, as the
// cluster client's slot map has it (no round trip once the map is loaded),
// or "" for a client of another kind.
func (s *Store) Shard(ctx context.Context, key string) (string, error) {
	c, ok := s.rdb.(*redis.ClusterClient)
	if !ok {
		return "", nil
	}
	// The slot is the hash tag's, and tagOf holds no brace: hashed whole,
	// it hashes as the tag of every Redis key of key does.
	m, err := c.MasterForKey(ctx, tagOf(key))
	if err != nil {
		return "", err
	}
	return m.Options().Addr, nil
}

// refreshEvery is the most often Refresh asks a cluster client to reload
// its slot map.
const refreshEvery = 100 * time.Millisecond

// Refresh asks a cluster client to reload its slot map in the background,
// at most once per refreshEvery: after a request failed, the map may name a
// master that died, and a promoted replica serves its slots now (go-redis
// otherwise keeps the map until ClusterStateReloadInterval, 60 s by
// default, or a MOVED reply). It does nothing for other clients.
func (s *Store) Refresh() {
	c, ok := s.rdb.(*redis.ClusterClient)
	if !ok {
		return
	}
	now := time.Now().UnixNano()
	last := s.refreshed.Load()
	if now-last < int64(refreshEvery) || !s.refreshed.CompareAndSwap(last, now) {
		return
	}
	c.ReloadState(context.Background())
}
