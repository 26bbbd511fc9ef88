package promlimit

import "errors"

// ErrInvalidConfig reports a Config New cannot use: a nil Limiter or a
// namespace that is not a valid metric name prefix.
var ErrInvalidConfig = errors.New("promlimit: invalid config")
