package remote

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Sharded reports whether the Store's client is a Redis Cluster client, whose
// keys live on several servers: Shard names the server of a key, and one
// server's failure says nothing of the others'.
func (s *Store) Sharded() bool { return s.cl != nil }

// Shard returns the address of the master that serves key's slot, as the
// Store's slot map has it (no round trip), or "" for a client of another
// kind. On a Cluster whose map names no master for the slot (not loaded
// yet) it returns an error, and has the map reloaded.
func (s *Store) Shard(key string) (string, error) {
	if s.cl == nil {
		return "", nil
	}
	// tagFor holds no brace, so it hashes as the tag of every Redis key of
	// key does.
	slot := int(crc16(s.tagFor(key)) % NumSlots)
	m := s.cl.owner(slot)
	if m == nil {
		s.cl.refresh()
		return "", fmt.Errorf("remote: no master known for slot %d", slot)
	}
	return m.addr, nil
}

// refreshEvery is the most often Refresh asks a cluster client to reload
// its slot map.
const refreshEvery = 100 * time.Millisecond

// Refresh reloads a Cluster's slot map in the background, at most once
// per refreshEvery: after a request failed, the map may name a master that
// died, and a promoted replica serves its slots now. It does nothing for
// other clients.
func (s *Store) Refresh() {
	if s.cl != nil {
		s.cl.refresh()
	}
}

// process runs one command whose keys hash to slot (-1: it has none, and
// on a Cluster any master runs it), following a Cluster's routing
// answers. The error is the command's.
func (s *Store) process(ctx context.Context, slot int, cmd redis.Cmder) error {
	if s.cl == nil {
		return s.rdb.Process(ctx, cmd)
	}
	if err := s.cl.ready(ctx); err != nil {
		cmd.SetErr(err)
		return err
	}
	r := routed{slot: slot, build: func() redis.Cmder { return cmd }}
	s.send(ctx, []*routed{&r})
	err := r.err()
	cmd.SetErr(err)
	return err
}

// routedCall is call c on its way through a Cluster, its command made by
// mk.
func (s *Store) routedCall(c *call, mk func([]any) redis.Cmder) *routed {
	return &routed{slot: KeySlot(c.keys[0]), sc: c.sc, build: func() redis.Cmder { return s.command(c, mk) }}
}

// eachMaster runs fn on every master of a Cluster, side by side, once the
// slot map is loaded, and returns the errors joined.
func (s *Store) eachMaster(ctx context.Context, fn func(*member) error) error {
	if err := s.cl.ready(ctx); err != nil {
		return err
	}
	ms := s.cl.masters()
	errs := make([]error, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(m); err != nil {
				errs[i] = fmt.Errorf("%s: %w", m.addr, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
