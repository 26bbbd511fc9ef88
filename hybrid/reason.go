package hybrid

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hybridlimit/hybridlimit/remote"
)

// Reason says why a request was answered by the failure mode rather than
// decided by Redis. Stats counts the answers by Reason.
type Reason uint8

const (
	// ReasonBreakerOpen: the node's breaker was open (or half-open with its
	// probes out), so nothing was sent.
	ReasonBreakerOpen Reason = iota
	// ReasonTimeout: the request was sent, and the node did not answer
	// within its budget (Config.Timeout, or the caller's deadline).
	ReasonTimeout
	// ReasonTransport: the connection failed (refused, reset, closed).
	ReasonTransport
	// ReasonServer: Redis answered with an error (OOM under maxmemory,
	// READONLY from a replica, a script error).
	ReasonServer
	// ReasonQueued: the request waited for a round trip until too little
	// of its budget was left to send it (the node had as many round trips
	// in flight as it may).
	ReasonQueued
	// ReasonCancelled: the caller's context ended before the answer came.
	// Such a request is answered by the failure mode, never with an error,
	// and does not count against the node.
	ReasonCancelled
	// ReasonNoNode: the ring had no node for the key.
	ReasonNoNode
	// ReasonConfig: the node refused the request for a reason waiting does
	// not cure (remote.IsConfigError: WRONGPASS, NOAUTH, NOPERM, a TLS
	// certificate that failed verification): a password or ACL changed
	// under a running service. Logged at ERROR.
	ReasonConfig
	// ReasonCluster: a Redis Cluster did not run the request, and no
	// master is to blame: it answered CLUSTERDOWN (with
	// cluster-require-full-coverage yes, every master does while a dead
	// master's replica is not yet promoted), or the request's slot was
	// moving and its routing answers (MOVED, ASK, TRYAGAIN) outlasted its
	// budget. Counted on no breaker; the slot map is reloaded.
	ReasonCluster
	// ReasonQueueFull: as many requests waited for a round trip to the
	// node as Batch.MaxQueue allows; the request was answered at once,
	// unsent. The node is not blamed: it is as busy as it may be.
	ReasonQueueFull

	numReasons
)

var reasonNames = [...]string{"breaker-open", "timeout", "transport", "server", "queued", "cancelled", "no-node", "config", "cluster", "queue-full"}

// String returns the reason's name as the metrics label it: "breaker-open",
// "timeout", "transport", "server", "queued", "cancelled", "no-node",
// "config", "cluster" or "queue-full".
func (r Reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return "Reason(" + strconv.Itoa(int(r)) + ")"
}

// Reasons returns every Reason, in order.
func Reasons() []Reason {
	out := make([]Reason, numReasons)
	for i := range out {
		out[i] = Reason(i)
	}
	return out
}

// reasonOf classifies the error of a round trip.
func reasonOf(err error) Reason {
	var ne net.Error
	var re redis.Error
	switch {
	case remote.IsConfigError(err):
		return ReasonConfig
	case errors.Is(err, remote.ErrCluster):
		return ReasonCluster
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return ReasonTimeout
	case errors.As(err, &re):
		return ReasonServer
	}
	return ReasonTransport
}

// reasonCounts counts answers by Reason.
type reasonCounts [numReasons]atomic.Int64

func (c *reasonCounts) load() map[Reason]int64 {
	m := make(map[Reason]int64, numReasons)
	for i := range c {
		m[Reason(i)] = c[i].Load()
	}
	return m
}

// failLogEvery is the most often a node's failing answers are logged: one
// line, with the count since the last one, instead of a line per request.
const failLogEvery = time.Second

// failLog throttles the log of one node's failing answers.
type failLog struct {
	next   atomic.Int64 // unix ns before which nothing is logged
	missed atomic.Int64 // answers since the last line
}
