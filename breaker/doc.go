// Package breaker tracks the health of one remote node with a circuit
// breaker, built on github.com/sony/gobreaker/v2's TwoStepCircuitBreaker.
// It knows nothing of Redis: the caller makes the call and says how it went.
//
// The caller's flow, for every remote call:
//
//	done, ok := b.Allow()
//	if !ok {
//		// The node is open (or half-open with its probes taken):
//		// do not call it; answer locally.
//	}
//	ctx, cancel := context.WithTimeout(parent, timeout)
//	err := call(ctx)
//	cancel()
//	done(breaker.Classify(parent, err, isAnswer))
//
// [Classify] turns the call's error into an [Outcome]: nil and errors that
// are answers (isAnswer, e.g. redis.Nil) are a [Success]; any error while
// the caller's own context (parent) is done is [Ignore], because the caller
// gave up; anything else is a [Failure], including our own per-call timeout
// expiring — gobreaker counts only errors, never slowness, so a slow node
// must surface as an error for the breaker to see it.
//
// # States
//
// A Breaker starts [Closed]. Config.ConsecutiveFailures failures in a row
// open it; a success resets the run, an ignore leaves it as it is. While
// [Open], Allow rejects every call. Once more than Config.OpenTimeout has
// passed the breaker is [HalfOpen] and admits Config.HalfOpenProbes probes;
// that many consecutive successes close it, one failure reopens it (for
// another OpenTimeout). A probe reported as Ignore frees its slot, so an
// ignored probe never leaves the breaker stuck half-open; a probe whose done
// is never called does, since half-open has no timeout: call done exactly
// once for every allowed call, with defer.
//
// The open-to-half-open change is lazy: gobreaker makes it (and this
// package logs it and counts it in [Stats]) when Allow, State or a done
// function is next called after the timeout, not when the timeout expires.
//
// An outcome reported after the breaker changed state since its call was
// allowed is discarded by gobreaker (each state change starts a new
// "generation"): a slow success from before the node failed cannot close a
// breaker that has since opened and half-opened. [Stats] still counts it.
//
// # Ignore on gobreaker
//
// gobreaker v2.4.0 has Settings.IsExcluded, which the two-step breaker
// honours: done passes an unexported sentinel error for Ignore, and
// IsExcluded recognises it. An excluded outcome changes no counter that
// trips or closes the breaker, and in half-open it is subtracted from the
// requests that count against the probe quota, so another probe may go.
//
// # Locks and logging
//
// gobreaker calls OnStateChange with its mutex held. Nothing user-supplied
// runs there: the callback only bumps atomic counters and pushes the
// transition onto a lock-free stack. The goroutine whose Allow, done or
// State caused the change pops the pending transitions after gobreaker has
// returned and logs each once, oldest first, through Config.Logger: Warn
// when the breaker opens, Info otherwise, with the node name, the old and
// new state, a sequence number and the counters. A slow or re-entrant log
// handler (one that calls back into the Breaker) therefore cannot deadlock
// it or stall other callers.
//
// A Breaker starts no goroutines and has nothing to close.
package breaker
