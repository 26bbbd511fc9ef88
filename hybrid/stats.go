package hybrid

import (
	"slices"
	"strings"

	"github.com/hybridlimit/hybridlimit/breaker"
)

// Stats is a snapshot of a Limiter's counters.
type Stats struct {
	// Decisions counts the requests answered, by Source (errors for bad
	// input are not counted); Denied counts those of them that were denied.
	Decisions map[Source]int64
	Denied    map[Source]int64
	// Undecided counts the answers of the failure mode (SourceFallback,
	// SourceFailOpen, SourceFailClosed) by why Redis did not decide them,
	// over every node; NodeStats has them per node.
	Undecided map[Reason]int64
	// Nodes has one entry per node in the ring, in name order.
	Nodes []NodeStats
	// DenyCacheKeys is the number of keys the denial cache holds.
	DenyCacheKeys int
	// Leases is the number of keys served from leases; LeaseUnits the units
	// they hold: the most the limits may be exceeded by at this moment, and
	// the units other instances cannot have meanwhile (with N instances,
	// their sum bounds both the over- and the under-admission). LeaseUnitsLost
	// counts the units leased that were, for certain, neither spent nor
	// given back (a give-back that was not sent, or whose node left the
	// ring): admissions lost for good. LeaseUnitsUnknown counts the units
	// whose fate is not known: of lease batches asked for and of give-backs
	// that were sent and got no answer in time (a timeout, a broken
	// connection), which may or may not have run on Redis. What leases have
	// cost the limits lies between LeaseUnitsLost and LeaseUnitsLost +
	// LeaseUnitsUnknown.
	Leases            int
	LeaseUnits        int64
	LeaseUnitsLost    int64
	LeaseUnitsUnknown int64
}

// NodeStats is one node's counters.
type NodeStats struct {
	// Name is the node's name on the ring: Node.Name, or the host:port
	// (and /db) of an address in Config.Addrs.
	Name string
	// Calls is the number of round trips to the node; Errors how many of
	// them failed (timeouts included). Batched is the number of requests
	// decided in round trips of more than one request.
	Calls, Errors, Batched int64
	// Breaker is the state of the node's breaker: "closed", "open" or
	// "half-open".
	Breaker string
	// Opened counts the times the breaker opened.
	Opened int64
	// Degraded is true while the breaker is not closed: the node's keys are
	// answered by the failure mode (all of them while it is open, all but
	// the probes while it is half-open).
	Degraded bool
	// Latency is the histogram of the node's round-trip times.
	Latency Latency
	// Undecided counts the answers for the node's keys given by the
	// failure mode, by Reason.
	Undecided map[Reason]int64
	// InFlight is the number of round trips to the node in flight now;
	// MaxInFlight the most the Limiter keeps in flight at once: the
	// connections of the node's client (Pool), at most
	// Batch.MaxInFlight. A node whose latency grows gets more round trips
	// in flight, each on its own connection, up to MaxInFlight.
	InFlight, MaxInFlight int
	// Queued is the number of requests waiting for a round trip to the
	// node now; MaxQueue the most that may (Batch.MaxQueue).
	Queued, MaxQueue int
	// Pool is the number of connections the node's client may open (its
	// PoolSize): a failed node costs at most Pool new connections per
	// Breaker.OpenTimeout.
	Pool int
	// EvictionPolicy is the node's maxmemory-policy as read when it joined
	// ("" where CONFIG GET is not allowed or the node was down); MayEvict
	// is true when a maxmemory is set and the policy is not noeviction:
	// the node may then drop limiter keys, whose clients start afresh.
	EvictionPolicy string
	MayEvict       bool
	// Functions is true while the node runs the limiter's Lua code as a
	// function library (FCALL: Redis 7 and later, with an ACL user who may
	// load functions), which Redis builds once, rather than as scripts
	// (EVALSHA), which it builds at every call.
	Functions bool
	// Shards are, for a Redis Cluster node, its masters as keys have
	// routed to them, in name order, each with a breaker of its own (the
	// node's Breaker then stays closed: one master's failure sends only
	// its own keys to the failure mode).
	Shards []ShardStats
}

// ShardStats is one Redis Cluster master's breaker.
type ShardStats struct {
	Name    string // the master's address
	Breaker string // "closed", "open" or "half-open"
	Opened  int64  // the times the breaker opened
}

// Stats returns a snapshot of the counters. It changes nothing: a breaker
// whose OpenTimeout has passed is reported "half-open" but moves there only
// when a request arrives.
func (l *Limiter) Stats() Stats {
	s := Stats{Decisions: make(map[Source]int64, numSources), Denied: make(map[Source]int64, numSources), Undecided: make(map[Reason]int64, numReasons)}
	s.Undecided[ReasonNoNode] = l.noNode.Load()
	allowed, denied := l.counts.load()
	for i := range numSources {
		s.Decisions[i] = allowed[i] + denied[i]
		s.Denied[i] = denied[i]
	}
	if l.deny != nil {
		s.DenyCacheKeys = l.deny.len()
	}
	if l.leases != nil {
		s.Leases = int(l.leases.count.Load())
		s.LeaseUnits = l.leases.outstanding()
		s.LeaseUnitsLost = l.leases.lost.Load()
		s.LeaseUnitsUnknown = l.leases.unknown.Load()
	}
	nodes := *l.topo.nodes.Load()
	for _, name := range l.topo.ring.Members() {
		nd := nodes[name]
		if nd == nil {
			continue
		}
		bs := nd.br.Stats()
		state := nd.br.Peek()
		undecided := nd.undecided.load()
		for r, n := range undecided {
			s.Undecided[r] += n
		}
		inflight, waiting := nd.q.load()
		s.Nodes = append(s.Nodes, NodeStats{
			Name:           name,
			Calls:          nd.calls.Load(),
			Errors:         nd.errs.Load(),
			Batched:        nd.batched.Load(),
			Breaker:        state.String(),
			Opened:         int64(bs.ToOpen),
			Degraded:       state != breaker.Closed,
			Latency:        nd.latency.snapshot(),
			Undecided:      undecided,
			InFlight:       inflight,
			Queued:         waiting,
			MaxInFlight:    nd.conc,
			MaxQueue:       nd.q.max,
			Pool:           nd.store.Concurrency(),
			EvictionPolicy: nd.eviction.Policy,
			MayEvict:       nd.eviction.MayEvict(),
			Functions:      nd.store.Functions(),
			Shards:         nd.shardStats(),
		})
	}
	return s
}

// shardStats returns the breakers of a cluster node's masters.
func (nd *node) shardStats() []ShardStats {
	var out []ShardStats
	nd.shards.Range(func(k, v any) bool {
		br := v.(*breaker.Breaker)
		out = append(out, ShardStats{Name: k.(string), Breaker: br.Peek().String(), Opened: int64(br.Stats().ToOpen)})
		return true
	})
	slices.SortFunc(out, func(a, b ShardStats) int { return strings.Compare(a.Name, b.Name) })
	return out
}
