package hybrid

import (
	"errors"

	"github.com/hybridlimit/hybridlimit/limit"
	"github.com/hybridlimit/hybridlimit/remote"
)

var (
	// ErrInvalidKey reports an empty key or one longer than MaxKeyLen bytes.
	ErrInvalidKey = remote.ErrInvalidKey
	// ErrInvalidLimit reports a limit that cannot be enforced (see
	// limit.Limit.Validate), no limit at all, or one given twice.
	ErrInvalidLimit = limit.ErrInvalidLimit
	// ErrCostExceedsLimit reports a cost larger than a limit's capacity: such
	// a request could never pass, so it is an error, not a denial.
	ErrCostExceedsLimit = limit.ErrCostExceedsLimit
	// ErrInvalidCost reports a cost below 1.
	ErrInvalidCost = limit.ErrInvalidCost
	// ErrClosed is returned by every call after Close.
	ErrClosed = errors.New("hybrid: limiter closed")
	// ErrInvalidNode reports a node that cannot be added: an empty or
	// duplicate name, or a nil client.
	ErrInvalidNode = errors.New("hybrid: invalid node")
	// ErrUnknownNode reports a RemoveNode of a name not in the ring.
	ErrUnknownNode = errors.New("hybrid: unknown node")
	// ErrMisconfigured reports, from New and AddNode, a node that refused
	// the limiter for a reason that waiting does not cure: a wrong or
	// missing password (WRONGPASS, NOAUTH), an ACL that forbids what the
	// scripts need (NOPERM), or a TLS certificate that failed
	// verification. The error names the node and the cause. A node that
	// is merely unreachable is not an error: its keys start in the
	// failure mode.
	ErrMisconfigured = remote.ErrMisconfigured
)
