package remote

import (
	"errors"
	"fmt"

	"github.com/hybridlimit/hybridlimit/limit"
)

var (
	// ErrInvalidKey reports an empty key or one longer than MaxKeyLen bytes.
	ErrInvalidKey = errors.New("remote: invalid key")
	// ErrTooManyLimits reports more than MaxLimits limits in one request;
	// it wraps limit.ErrInvalidLimit.
	ErrTooManyLimits = fmt.Errorf("%w: too many limits for one request", limit.ErrInvalidLimit)
	// ErrReply reports a script reply of an unexpected shape.
	ErrReply = errors.New("remote: unexpected reply from redis")
)
