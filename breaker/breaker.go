package breaker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/sony/gobreaker/v2"
)

// State is the state of a Breaker.
type State int

// The states of a Breaker.
const (
	// Closed: calls are allowed and their outcomes counted; enough
	// consecutive failures open the breaker.
	Closed State = iota
	// HalfOpen: after OpenTimeout, a limited number of probe calls are
	// allowed; their outcomes decide between Closed and Open.
	HalfOpen
	// Open: no call is allowed until OpenTimeout has passed.
	Open
)

// String returns "closed", "half-open" or "open".
func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case HalfOpen:
		return "half-open"
	case Open:
		return "open"
	default:
		return fmt.Sprintf("State(%d)", int(s))
	}
}

func fromGobreaker(s gobreaker.State) State {
	switch s {
	case gobreaker.StateHalfOpen:
		return HalfOpen
	case gobreaker.StateOpen:
		return Open
	default:
		return Closed
	}
}

// Outcome is what a caller reports about an allowed call.
type Outcome int

// The outcomes of a call. The zero Outcome is none of them.
const (
	// Success: the node answered. Counts towards closing the breaker and
	// resets the run of consecutive failures.
	Success Outcome = iota + 1
	// Failure: the node did not answer usefully (connection error, our own
	// deadline expired, an error reply meaning the node is unhealthy).
	// Counts towards opening the breaker; a failed probe reopens it.
	Failure
	// Ignore: the call says nothing about the node's health, typically
	// because the caller gave up (its context was cancelled). Counts neither
	// way; a half-open probe reported as Ignore frees its slot.
	Ignore
)

// String returns "success", "failure" or "ignore".
func (o Outcome) String() string {
	switch o {
	case Success:
		return "success"
	case Failure:
		return "failure"
	case Ignore:
		return "ignore"
	default:
		return fmt.Sprintf("Outcome(%d)", int(o))
	}
}

// Classify maps the error of a remote call to an Outcome:
//
//   - err == nil: Success.
//   - success != nil && success(err): Success. This is for errors that are
//     answers, such as go-redis's redis.Nil ("no such key"): the node is
//     healthy.
//   - parent.Err() != nil: Ignore. parent is the caller's own context, the
//     one the call's deadline was derived from; if it was cancelled or hit
//     its own deadline, the caller gave up, and whatever error that caused
//     says nothing about the node. This wins over the error's value, so a
//     call that failed while the caller was leaving is not blamed on the
//     node either.
//   - anything else: Failure. This includes context.DeadlineExceeded from
//     the child context the caller made with its own per-call timeout while
//     parent.Err() is still nil (the node was too slow, which is what the
//     timeout is for), context.Canceled from a child the caller cancelled
//     itself, connection and protocol errors.
//
// A nil parent is treated as never cancelled. A nil success recognises no
// error. Classify calls success at most once, on the caller's goroutine.
func Classify(parent context.Context, err error, success func(error) bool) Outcome {
	if err == nil {
		return Success
	}
	if success != nil && success(err) {
		return Success
	}
	if parent != nil && parent.Err() != nil {
		return Ignore
	}
	return Failure
}

// Stats is a snapshot of a Breaker's counters, all counted since New.
//
// Each field is read atomically, but not all at once: a snapshot taken while
// calls are in flight may count a call as Allowed before its outcome. Once
// every allowed call has reported, Allowed == Successes + Failures + Ignored.
type Stats struct {
	// Allowed is the number of Allow calls that returned ok == true.
	Allowed uint64
	// Rejected is the number of Allow calls that returned ok == false,
	// because the breaker was open or half-open with its probes taken.
	Rejected uint64
	// Successes, Failures and Ignored count the outcomes reported through
	// done functions, one per allowed call. They count what was reported:
	// gobreaker silently discards an outcome reported after the state
	// changed since the call was allowed (see the package documentation),
	// and such an outcome is still counted here.
	Successes, Failures, Ignored uint64
	// ToOpen, ToHalfOpen and ToClosed count the transitions into each state.
	ToOpen, ToHalfOpen, ToClosed uint64
}

// counters are the atomics behind Stats.
type counters struct {
	allowed, rejected            atomic.Uint64
	successes, failures, ignored atomic.Uint64
	toOpen, toHalfOpen, toClosed atomic.Uint64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Allowed:    c.allowed.Load(),
		Rejected:   c.rejected.Load(),
		Successes:  c.successes.Load(),
		Failures:   c.failures.Load(),
		Ignored:    c.ignored.Load(),
		ToOpen:     c.toOpen.Load(),
		ToHalfOpen: c.toHalfOpen.Load(),
		ToClosed:   c.toClosed.Load(),
	}
}

// transition is one state change waiting to be logged. Pending transitions
// form a stack (newest first) behind Breaker.pending.
type transition struct {
	seq      uint64
	from, to State
	stats    Stats
	next     *transition
}

// Errors handed to gobreaker's done callback. They never leave the package.
var (
	errFailure = errors.New("breaker: failure reported")
	errIgnored = errors.New("breaker: outcome ignored")
)

// Breaker tracks the health of one node. It is safe for concurrent use, and
// so are the done functions it returns. It starts no goroutines and needs no
// Close.
type Breaker struct {
	name   string
	cfg    Config
	logger *slog.Logger
	cb     *gobreaker.TwoStepCircuitBreaker[struct{}]

	stats   counters
	seq     atomic.Uint64 // transitions so far; written under gobreaker's lock
	pending atomic.Pointer[transition]

	// openUntil is, while the breaker is open, the instant (ns since base)
	// its OpenTimeout ends; 0 otherwise. It lets Allow and Open refuse
	// without taking gobreaker's mutex, which every caller of an open
	// node's keys would otherwise queue on.
	base      time.Time
	openUntil atomic.Int64
	// state mirrors gobreaker's state as of its last transition (written
	// in onStateChange), for Peek.
	state atomic.Int32

	// The outcomes of the current window, for FailureRatio.
	winStart           atomic.Int64 // ns since base
	winCalls, winFails atomic.Int64
}

// record counts an outcome in the current window, starting a new window
// when Window has passed.
func (b *Breaker) record(failed bool) {
	now := int64(time.Since(b.base))
	if s := b.winStart.Load(); now-s >= int64(b.cfg.Window) && b.winStart.CompareAndSwap(s, now) {
		b.winCalls.Store(0)
		b.winFails.Store(0)
	}
	b.winCalls.Add(1)
	if failed {
		b.winFails.Add(1)
	}
}

// readyToTrip is gobreaker's ReadyToTrip, called under its lock on each
// failure in the closed state: it only reads.
func (b *Breaker) readyToTrip(c gobreaker.Counts) bool {
	if c.ConsecutiveFailures >= b.cfg.ConsecutiveFailures {
		return true
	}
	calls, fails := b.winCalls.Load(), b.winFails.Load()
	return calls >= int64(b.cfg.MinCalls) && float64(fails) >= b.cfg.FailureRatio*float64(calls)
}

// New returns a closed Breaker for the node called name. cfg is copied and
// its zero fields filled with their defaults. It returns an error wrapping
// ErrInvalidName for an empty name and ErrInvalidConfig for a field out of
// range.
func New(name string, cfg Config) (*Breaker, error) {
	if name == "" {
		return nil, ErrInvalidName
	}
	cfg, err := cfg.WithDefaults(name)
	if err != nil {
		return nil, err
	}
	b := &Breaker{name: name, cfg: cfg, logger: cfg.Logger, base: time.Now()}
	b.cb = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name:        name,
		MaxRequests: cfg.HalfOpenProbes,
		// Interval 0: the closed state never clears its counts on a timer.
		// Only consecutive failures trip the breaker, and a timer would start
		// a new generation, silently dropping the outcomes of calls in flight.
		Interval: 0,
		Timeout:  cfg.OpenTimeout,
		// gobreaker's default trips at ConsecutiveFailures > 5, i.e. on the
		// sixth; ours trips on exactly the configured count.
		ReadyToTrip:   b.readyToTrip,
		IsSuccessful:  func(err error) bool { return err == nil },
		IsExcluded:    func(err error) bool { return err == errIgnored },
		OnStateChange: b.onStateChange,
	})
	return b, nil
}

// Name returns the name the Breaker was created with.
func (b *Breaker) Name() string { return b.name }

// Config returns the Breaker's configuration, with defaults filled in.
func (b *Breaker) Config() Config { return b.cfg }

// State returns the current state. An open breaker whose OpenTimeout has
// passed becomes half-open here (and the change is logged) if no other call
// has noticed it yet.
func (b *Breaker) State() State {
	s := fromGobreaker(b.cb.State())
	b.flush()
	return s
}

// Peek returns the state without changing it: an open breaker whose
// OpenTimeout has passed is reported half-open (its next call is a probe),
// but stays open until a call notices. Unlike State it takes no lock and
// logs nothing, so a metrics scrape never moves a breaker.
func (b *Breaker) Peek() State {
	s := State(b.state.Load())
	if s == Open && !b.Open() {
		return HalfOpen
	}
	return s
}

// Stats returns a snapshot of the counters. It takes no lock.
func (b *Breaker) Stats() Stats { return b.stats.snapshot() }

// noop is the done function of a rejected call.
func noop(Outcome) {}

// Allow asks whether a call to the node may be made now.
//
// If ok is false the breaker is open, or half-open with all its probes in
// flight: the caller must not attempt the call, and should answer it
// another way. done is then a no-op.
//
// If ok is true the caller makes the call and must then call done exactly
// once with its Outcome (Classify computes it from the call's error); a
// deferred call is the safest. Calls after the first are ignored. An
// Outcome other than Success, Failure or Ignore counts as Failure. A done
// that is never called while the breaker is half-open holds a probe slot
// forever: half-open has no timeout, so the breaker would stay half-open,
// rejecting everything, until the process restarts.
func (b *Breaker) Allow() (done func(Outcome), ok bool) {
	if b.Open() {
		b.stats.rejected.Add(1)
		return noop, false
	}
	report, err := b.cb.Allow()
	if err != nil {
		// gobreaker.ErrOpenState or gobreaker.ErrTooManyRequests.
		b.stats.rejected.Add(1)
		b.flush()
		return noop, false
	}
	b.stats.allowed.Add(1)
	b.flush()
	var called atomic.Bool
	return func(o Outcome) {
		if called.Swap(true) {
			return
		}
		// Count before reporting, so that the Stats recorded with a
		// transition this outcome causes include it.
		var e error
		switch o {
		case Success:
			b.stats.successes.Add(1)
			b.record(false)
		case Ignore:
			b.stats.ignored.Add(1)
			e = errIgnored
		default:
			b.stats.failures.Add(1)
			b.record(true)
			e = errFailure
		}
		report(e)
		b.flush()
	}, true
}

// Open reports whether the breaker is open and its OpenTimeout has not yet
// passed, so that a call now would be refused. It takes no lock.
func (b *Breaker) Open() bool {
	u := b.openUntil.Load()
	return u != 0 && int64(time.Since(b.base)) < u
}

// onStateChange is gobreaker's OnStateChange. gobreaker calls it with its
// mutex held, so it only counts and records the transition, lock-free; the
// goroutine that caused it logs it via flush once the lock is released.
func (b *Breaker) onStateChange(_ string, from, to gobreaker.State) {
	t := &transition{from: fromGobreaker(from), to: fromGobreaker(to)}
	b.state.Store(int32(t.to))
	if t.to == Closed {
		// A node that recovered starts a fresh window: its failures from
		// before must not trip it again at the first stray one.
		b.winStart.Store(int64(time.Since(b.base)))
		b.winCalls.Store(0)
		b.winFails.Store(0)
	}
	if t.to == Open {
		// gobreaker's own expiry was set just before this call, so this
		// one ends a little later: never earlier than gobreaker lets
		// probes through.
		b.openUntil.Store(int64(time.Since(b.base) + b.cfg.OpenTimeout))
	} else {
		b.openUntil.Store(0)
	}
	switch t.to {
	case Open:
		b.stats.toOpen.Add(1)
	case HalfOpen:
		b.stats.toHalfOpen.Add(1)
	case Closed:
		b.stats.toClosed.Add(1)
	}
	t.seq = b.seq.Add(1)
	t.stats = b.stats.snapshot()
	for {
		head := b.pending.Load()
		t.next = head
		if b.pending.CompareAndSwap(head, t) {
			return
		}
	}
}

// flush logs the pending transitions, oldest first. It must not be called
// with gobreaker's mutex held. Concurrent flushes each take a disjoint batch
// (Swap), so every transition is logged exactly once; a transition is
// always followed by a flush on the goroutine that caused it, so none is
// left behind.
func (b *Breaker) flush() {
	if b.pending.Load() == nil {
		return
	}
	var list *transition
	for t := b.pending.Swap(nil); t != nil; {
		next := t.next
		t.next = list
		list = t
		t = next
	}
	for t := list; t != nil; t = t.next {
		b.log(t)
	}
}

func (b *Breaker) log(t *transition) {
	level := slog.LevelInfo
	if t.to == Open {
		level = slog.LevelWarn
	}
	s := t.stats
	b.logger.LogAttrs(context.Background(), level, "breaker: state changed",
		slog.String("node", b.name),
		slog.String("from", t.from.String()),
		slog.String("to", t.to.String()),
		slog.Uint64("seq", t.seq),
		slog.Group("counts",
			slog.Uint64("allowed", s.Allowed),
			slog.Uint64("rejected", s.Rejected),
			slog.Uint64("successes", s.Successes),
			slog.Uint64("failures", s.Failures),
			slog.Uint64("ignored", s.Ignored),
		),
	)
}
