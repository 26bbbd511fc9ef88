package remote

import (
	"context"

	"github.com/hybridlimit/hybridlimit/limit"
)

// decide is Decide of a decision built by NewDecision, whose error it
// returns for bad input.
func (s *Store) decide(ctx context.Context, key string, cost int64, limits ...limit.Limit) (limit.Decision, int, error) {
	req, err := NewDecision(key, cost, limits...)
	if err != nil {
		return limit.Decision{}, 0, err
	}
	r, err := s.Decide(ctx, req)
	return r.Decision, r.Binding, err
}

// lease is Decide of a lease built by NewLease.
func (s *Store) lease(ctx context.Context, key string, want int64, limits ...limit.Limit) (Result, error) {
	req, err := NewLease(key, want, limits...)
	if err != nil {
		return Result{}, err
	}
	return s.Decide(ctx, req)
}

// giveBack is GiveBack for key and limits.
func (s *Store) giveBack(ctx context.Context, key string, at, units int64, limits ...limit.Limit) error {
	req, err := NewLease(key, 1, limits...)
	if err != nil {
		return err
	}
	return s.GiveBack(ctx, req, at, units)
}

// req is a decision the test knows to be valid.
func req(key string, cost int64, limits []limit.Limit) Request {
	r, err := NewDecision(key, cost, limits...)
	if err != nil {
		panic(err)
	}
	return r
}

// leaseReq is a lease the test knows to be valid.
func leaseReq(key string, want int64, limits []limit.Limit) Request {
	r, err := NewLease(key, want, limits...)
	if err != nil {
		panic(err)
	}
	return r
}

// peek is Peek for key and limits.
func (s *Store) peek(ctx context.Context, key string, limits ...limit.Limit) (Result, error) {
	req, err := NewDecision(key, 1, limits...)
	if err != nil {
		return Result{}, err
	}
	return s.Peek(ctx, req)
}

// refund is Refund for key and limits.
func (s *Store) refund(ctx context.Context, key string, units int64, limits ...limit.Limit) error {
	req, err := NewDecision(key, 1, limits...)
	if err != nil {
		return err
	}
	return s.Refund(ctx, req, units)
}

// reset is Reset for key and limits.
func (s *Store) reset(ctx context.Context, key string, limits ...limit.Limit) error {
	req, err := NewDecision(key, 1, limits...)
	if err != nil {
		return err
	}
	return s.Reset(ctx, req)
}
