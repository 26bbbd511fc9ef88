package limit

import "errors"

var (
	// ErrInvalidLimit reports a Limit that cannot be enforced: a Rate,
	// Period or Burst out of range, an unknown Algorithm, or a combination
	// too fine to compute exactly. The wrapped message says which.
	ErrInvalidLimit = errors.New("limit: invalid limit")

	// ErrCostExceedsLimit reports a cost larger than a limit's capacity: such
	// a request could never be admitted, so it is an error, not a denial.
	ErrCostExceedsLimit = errors.New("limit: cost exceeds the limit's capacity")

	// ErrInvalidCost reports a cost below 1.
	ErrInvalidCost = errors.New("limit: cost must be at least 1")
)
