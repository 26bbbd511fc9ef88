package local

import "errors"

var (
	// ErrInvalidKey reports an empty key. Nothing is consumed.
	ErrInvalidKey = errors.New("local: invalid key: empty")

	// ErrTooManyLimits reports a request with more distinct limits than one
	// shard can hold (see Config.MaxKeys). It can only happen when MaxKeys is
	// smaller than the number of limits of one request. Nothing is consumed.
	ErrTooManyLimits = errors.New("local: more limits for one key than a shard holds")
)
