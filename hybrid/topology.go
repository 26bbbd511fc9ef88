package hybrid

import (
	"sync/atomic"

	"github.com/hybridlimit/hybridlimit/shard"
)

// topology is the ring and the nodes it routes to: which node owns a key
// now. The Limiter changes it (AddNode, RemoveNode); the leases read it.
type topology struct {
	ring  *shard.Ring
	nodes atomic.Pointer[map[string]*node] // by name; replaced whole, never changed
}

// locate returns the node that owns key, or nil.
func (t *topology) locate(key string) *node {
	name, ok := t.ring.Locate(key)
	if !ok {
		return nil
	}
	return (*t.nodes.Load())[name]
}

// byName returns the node called name, or nil.
func (t *topology) byName(name string) *node { return (*t.nodes.Load())[name] }
