package hybrid

import (
	"sync/atomic"

	"github.com/hybridlimit/hybridlimit/breaker"
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

// route returns the node that owns key and the breaker of its Cluster
// master (nil on other nodes, or while the slot map cannot say). ok is
// false when nothing should be sent, why saying why: ReasonNoNode (nd is
// then nil), or ReasonBreakerOpen while the breaker that guards key is
// open.
func (t *topology) route(key string) (nd *node, shard *breaker.Breaker, why Reason, ok bool) {
	if nd = t.locate(key); nd == nil {
		return nil, nil, ReasonNoNode, false
	}
	shard, open := nd.breakerFor(key)
	if open {
		return nd, shard, ReasonBreakerOpen, false
	}
	return nd, shard, 0, true
}

// byName returns the node called name, or nil.
func (t *topology) byName(name string) *node { return (*t.nodes.Load())[name] }
