package remote

import "errors"

var (
	// ErrInvalidKey reports an empty key or one longer than MaxKeyLen bytes.
	ErrInvalidKey = errors.New("remote: invalid key")
	// ErrTooManyLimits reports more than MaxLimits limits in one request.
	ErrTooManyLimits = errors.New("remote: too many limits for one request")
	// ErrReply reports a script reply of an unexpected shape.
	ErrReply = errors.New("remote: unexpected reply from redis")
)
