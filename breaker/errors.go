package breaker

import "errors"

var (
	// ErrInvalidName reports an empty breaker name. The name identifies the
	// node in logs, so New refuses to build a breaker without one.
	ErrInvalidName = errors.New("breaker: invalid name: empty")

	// ErrInvalidConfig reports a Config field out of range. The wrapped
	// message names the field, its value and the breaker's name.
	ErrInvalidConfig = errors.New("breaker: invalid config")
)
