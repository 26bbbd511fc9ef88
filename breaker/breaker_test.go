package breaker_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hybridlimit/hybridlimit/breaker"
)

// recorder is a slog.Handler that keeps every record, so tests can check
// what was logged. onHandle, if set, runs inside Handle.
type recorder struct {
	mu       sync.Mutex
	records  []slog.Record
	onHandle func(slog.Record)
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *recorder) WithGroup(string) slog.Handler            { return r }

func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	if r.onHandle != nil {
		r.onHandle(rec)
	}
	r.mu.Lock()
	r.records = append(r.records, rec.Clone())
	r.mu.Unlock()
	return nil
}

// transitions returns "from->to@LEVEL" for each logged record, in order.
func (r *recorder) transitions() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, rec := range r.records {
		var from, to string
		rec.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "from":
				from = a.Value.String()
			case "to":
				to = a.Value.String()
			}
			return true
		})
		out = append(out, fmt.Sprintf("%s->%s@%s", from, to, rec.Level))
	}
	return out
}

func newBreaker(t *testing.T, cfg breaker.Config) (*breaker.Breaker, *recorder) {
	t.Helper()
	rec := &recorder{}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(rec)
	}
	b, err := breaker.New("node-a", cfg)
	if err != nil {
		t.Fatalf("New = %v", err)
	}
	return b, rec
}

// call runs one call through b with the given outcome and reports whether
// it was allowed.
func call(b *breaker.Breaker, o breaker.Outcome) bool {
	done, ok := b.Allow()
	if ok {
		done(o)
	}
	return ok
}

func mustCall(t *testing.T, b *breaker.Breaker, o breaker.Outcome) {
	t.Helper()
	if !call(b, o) {
		t.Fatalf("Allow() ok = false in state %v, want true", b.State())
	}
}

func wantState(t *testing.T, b *breaker.Breaker, want breaker.State) {
	t.Helper()
	if got := b.State(); got != want {
		t.Fatalf("State() = %v, want %v", got, want)
	}
}

func wantRejected(t *testing.T, b *breaker.Breaker) {
	t.Helper()
	done, ok := b.Allow()
	if ok {
		done(breaker.Ignore)
		t.Fatalf("Allow() ok = true in state %v, want false", b.State())
	}
}

// trip opens b, which must be closed, with ConsecutiveFailures failures.
func trip(t *testing.T, b *breaker.Breaker) {
	t.Helper()
	for range b.Config().ConsecutiveFailures {
		mustCall(t, b, breaker.Failure)
	}
	wantState(t, b, breaker.Open)
}

func TestNew(t *testing.T) {
	b, err := breaker.New("n", breaker.Config{})
	if err != nil {
		t.Fatalf("New(zero Config) = %v", err)
	}
	got := b.Config()
	if got.ConsecutiveFailures != 5 || got.OpenTimeout != time.Second || got.HalfOpenProbes != 1 || got.Logger != slog.Default() {
		t.Errorf("Config() = %+v, want defaults 5, 1s, 1, slog.Default()", got)
	}
	if b.Name() != "n" {
		t.Errorf("Name() = %q, want %q", b.Name(), "n")
	}
	if b.State() != breaker.Closed {
		t.Errorf("State() = %v, want closed", b.State())
	}

	tests := []struct {
		name    string
		nodeNm  string
		cfg     breaker.Config
		wantErr error
	}{
		{"empty name", "", breaker.Config{}, breaker.ErrInvalidName},
		{"negative OpenTimeout", "n", breaker.Config{OpenTimeout: -time.Nanosecond}, breaker.ErrInvalidConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := breaker.New(tt.nodeNm, tt.cfg)
			if !errors.Is(err, tt.wantErr) || b != nil {
				t.Errorf("New(%q, %+v) = %v, %v, want nil, %v", tt.nodeNm, tt.cfg, b, err, tt.wantErr)
			}
		})
	}
}

func TestOpensAfterExactlyConsecutiveFailures(t *testing.T) {
	for _, n := range []uint32{0, 1, 2, 5, 7} {
		t.Run(fmt.Sprintf("ConsecutiveFailures=%d", n), func(t *testing.T) {
			// MinCalls out of reach: this is about runs, not the ratio.
			b, _ := newBreaker(t, breaker.Config{ConsecutiveFailures: n, MinCalls: 1000})
			n := b.Config().ConsecutiveFailures
			// n-1 failures, a success, n-1 failures: never n in a row.
			for range 2 {
				for range n - 1 {
					mustCall(t, b, breaker.Failure)
				}
				wantState(t, b, breaker.Closed)
				mustCall(t, b, breaker.Success)
			}
			for range n - 1 {
				mustCall(t, b, breaker.Failure)
			}
			wantState(t, b, breaker.Closed)
			mustCall(t, b, breaker.Failure)
			wantState(t, b, breaker.Open)
			if s := b.Stats(); s.ToOpen != 1 || s.Failures != uint64(3*(n-1)+1) {
				t.Errorf("Stats() = %+v, want ToOpen 1, Failures %d", s, 3*(n-1)+1)
			}
		})
	}
}

func TestOpenRejectsWithoutCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := newBreaker(t, breaker.Config{ConsecutiveFailures: 2, OpenTimeout: time.Second})
		calls := 0
		attempt := func() {
			done, ok := b.Allow()
			if !ok {
				done(breaker.Success) // a no-op: must not count
				return
			}
			calls++
			done(breaker.Failure)
		}
		attempt()
		attempt()
		wantState(t, b, breaker.Open)
		for range 10 {
			attempt()
			time.Sleep(50 * time.Millisecond)
		}
		if calls != 2 {
			t.Errorf("calls = %d, want 2: calls were made while open", calls)
		}
		if s := b.Stats(); s.Allowed != 2 || s.Rejected != 10 || s.Successes != 0 {
			t.Errorf("Stats() = %+v, want Allowed 2, Rejected 10, Successes 0", s)
		}
	})
}

func TestHalfOpenAfterOpenTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = 3 * time.Second
		b, rec := newBreaker(t, breaker.Config{ConsecutiveFailures: 1, OpenTimeout: timeout, HalfOpenProbes: 3})
		trip(t, b)
		if !b.Open() {
			t.Errorf("Open() = false just after the trip, want true")
		}

		time.Sleep(timeout - time.Nanosecond)
		wantRejected(t, b)
		if !b.Open() {
			t.Errorf("Open() = false before OpenTimeout, want true")
		}
		// gobreaker half-opens once the expiry is strictly Before now.
		time.Sleep(time.Nanosecond)
		wantState(t, b, breaker.Open)
		if b.Open() {
			t.Errorf("Open() = true once OpenTimeout has passed, want false")
		}
		time.Sleep(time.Nanosecond)
		wantState(t, b, breaker.HalfOpen)

		// HalfOpenProbes probes go, concurrently; a fourth does not.
		var dones []func(breaker.Outcome)
		for range 3 {
			done, ok := b.Allow()
			if !ok {
				t.Fatalf("Allow() probe %d ok = false, want true", len(dones)+1)
			}
			dones = append(dones, done)
		}
		wantRejected(t, b)
		// It takes all three successes to close.
		dones[0](breaker.Success)
		dones[1](breaker.Success)
		wantState(t, b, breaker.HalfOpen)
		dones[2](breaker.Success)
		wantState(t, b, breaker.Closed)
		if b.Open() {
			t.Errorf("Open() = true when closed, want false")
		}

		want := []string{"closed->open@WARN", "open->half-open@INFO", "half-open->closed@INFO"}
		if got := rec.transitions(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("logged %v, want %v", got, want)
		}
		if s := b.Stats(); s.ToOpen != 1 || s.ToHalfOpen != 1 || s.ToClosed != 1 {
			t.Errorf("Stats() = %+v, want one transition into each state", s)
		}
	})
}

func TestFailedProbeReopens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = time.Second
		b, rec := newBreaker(t, breaker.Config{ConsecutiveFailures: 3, OpenTimeout: timeout, HalfOpenProbes: 2})
		trip(t, b)
		time.Sleep(timeout + 1)
		mustCall(t, b, breaker.Success)
		mustCall(t, b, breaker.Failure) // one failure is enough, whatever came before
		wantState(t, b, breaker.Open)
		wantRejected(t, b)

		// The reopened breaker waits a full OpenTimeout again.
		time.Sleep(timeout)
		wantState(t, b, breaker.Open)
		time.Sleep(time.Nanosecond) // just past it (synctest's clock)
		mustCall(t, b, breaker.Success)
		mustCall(t, b, breaker.Success)
		wantState(t, b, breaker.Closed)

		want := []string{
			"closed->open@WARN", "open->half-open@INFO", "half-open->open@WARN",
			"open->half-open@INFO", "half-open->closed@INFO",
		}
		if got := rec.transitions(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("logged %v, want %v", got, want)
		}
	})
}

func TestIgnoreDoesNotCount(t *testing.T) {
	b, _ := newBreaker(t, breaker.Config{ConsecutiveFailures: 3})
	for range 1000 {
		mustCall(t, b, breaker.Ignore)
	}
	wantState(t, b, breaker.Closed)

	// Ignore does not reset a run of failures either.
	mustCall(t, b, breaker.Failure)
	mustCall(t, b, breaker.Ignore)
	mustCall(t, b, breaker.Failure)
	mustCall(t, b, breaker.Ignore)
	wantState(t, b, breaker.Closed)
	mustCall(t, b, breaker.Failure)
	wantState(t, b, breaker.Open)
	if s := b.Stats(); s.Ignored != 1002 || s.Failures != 3 || s.Allowed != 1005 {
		t.Errorf("Stats() = %+v, want Ignored 1002, Failures 3, Allowed 1005", s)
	}
}

func TestIgnoredProbeDoesNotWedgeHalfOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := newBreaker(t, breaker.Config{ConsecutiveFailures: 1, OpenTimeout: time.Second, HalfOpenProbes: 1})
		trip(t, b)
		time.Sleep(time.Second + 1)

		// Many probes in a row are ignored (e.g. their callers went away):
		// each frees the only slot for the next.
		for i := range 100 {
			done, ok := b.Allow()
			if !ok {
				t.Fatalf("Allow() probe %d ok = false, want true: ignored probes hold the slot", i)
			}
			wantRejected(t, b) // the slot is taken while the probe is in flight
			done(breaker.Ignore)
			wantState(t, b, breaker.HalfOpen)
		}
		mustCall(t, b, breaker.Success)
		wantState(t, b, breaker.Closed)
	})
}

func TestIgnoredProbeDoesNotBreakSuccessRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := newBreaker(t, breaker.Config{ConsecutiveFailures: 1, OpenTimeout: time.Second, HalfOpenProbes: 2})
		trip(t, b)
		time.Sleep(time.Second + 1)
		mustCall(t, b, breaker.Success)
		mustCall(t, b, breaker.Ignore)
		wantState(t, b, breaker.HalfOpen)
		mustCall(t, b, breaker.Success)
		wantState(t, b, breaker.Closed)
	})
}

func TestStaleSuccessDoesNotCloseHalfOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := newBreaker(t, breaker.Config{ConsecutiveFailures: 1, OpenTimeout: time.Second})
		slow, ok := b.Allow() // allowed while closed, answers late
		if !ok {
			t.Fatal("Allow() ok = false, want true")
		}
		mustCall(t, b, breaker.Failure)
		time.Sleep(time.Second + 1)
		wantState(t, b, breaker.HalfOpen)

		slow(breaker.Success) // from an older generation: discarded
		wantState(t, b, breaker.HalfOpen)
		if s := b.Stats(); s.Successes != 1 {
			t.Errorf("Stats().Successes = %d, want 1 (reported, though discarded)", s.Successes)
		}
		mustCall(t, b, breaker.Success)
		wantState(t, b, breaker.Closed)
	})
}

func TestDoneCountsOnce(t *testing.T) {
	b, _ := newBreaker(t, breaker.Config{ConsecutiveFailures: 2})
	done, ok := b.Allow()
	if !ok {
		t.Fatal("Allow() ok = false, want true")
	}
	done(breaker.Failure)
	done(breaker.Failure)
	done(breaker.Success)
	wantState(t, b, breaker.Closed)
	if s := b.Stats(); s.Allowed != 1 || s.Failures != 1 || s.Successes != 0 {
		t.Errorf("Stats() = %+v, want Allowed 1, Failures 1, Successes 0", s)
	}
}

func TestUnknownOutcomeIsFailure(t *testing.T) {
	b, _ := newBreaker(t, breaker.Config{ConsecutiveFailures: 2})
	mustCall(t, b, breaker.Outcome(0))
	mustCall(t, b, breaker.Outcome(42))
	wantState(t, b, breaker.Open)
}

func TestClassify(t *testing.T) {
	errNil := errors.New("redis: nil")
	isNil := func(err error) bool { return errors.Is(err, errNil) }

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel2()

	tests := []struct {
		name    string
		parent  context.Context
		err     error
		success func(error) bool
		want    breaker.Outcome
	}{
		{"nil error", context.Background(), nil, isNil, breaker.Success},
		{"nil error, nil success", context.Background(), nil, nil, breaker.Success},
		{"nil error, parent cancelled", cancelled, nil, isNil, breaker.Success},
		{"success func error", context.Background(), errNil, isNil, breaker.Success},
		{"wrapped success func error", context.Background(), fmt.Errorf("get: %w", errNil), isNil, breaker.Success},
		{"success func error, parent cancelled", cancelled, errNil, isNil, breaker.Success},
		{"parent cancelled", cancelled, context.Canceled, isNil, breaker.Ignore},
		{"parent cancelled, other error", cancelled, errors.New("connection reset"), isNil, breaker.Ignore},
		{"parent deadline", expired, context.DeadlineExceeded, isNil, breaker.Ignore},
		{"child deadline only", context.Background(), context.DeadlineExceeded, isNil, breaker.Failure},
		{"child deadline only, wrapped", context.Background(), fmt.Errorf("i/o: %w", context.DeadlineExceeded), isNil, breaker.Failure},
		{"child cancelled only", context.Background(), context.Canceled, isNil, breaker.Failure},
		{"other error", context.Background(), errors.New("connection refused"), isNil, breaker.Failure},
		{"other error, nil success", context.Background(), errNil, nil, breaker.Failure},
		{"nil parent", nil, errors.New("connection refused"), isNil, breaker.Failure},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := breaker.Classify(tt.parent, tt.err, tt.success); got != tt.want {
				t.Errorf("Classify(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestClassifyChildDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancelParent := context.WithTimeout(context.Background(), time.Minute)
		defer cancelParent()
		child, cancel := context.WithTimeout(parent, time.Second)
		defer cancel()
		<-child.Done()
		if got := breaker.Classify(parent, child.Err(), nil); got != breaker.Failure {
			t.Errorf("Classify(child deadline) = %v, want failure", got)
		}

		time.Sleep(time.Minute)
		child2, cancel2 := context.WithTimeout(parent, time.Second)
		defer cancel2()
		if got := breaker.Classify(parent, child2.Err(), nil); got != breaker.Ignore {
			t.Errorf("Classify(parent deadline) = %v, want ignore", got)
		}
	})
}

func TestStateString(t *testing.T) {
	tests := []struct {
		s    fmt.Stringer
		want string
	}{
		{breaker.Closed, "closed"},
		{breaker.HalfOpen, "half-open"},
		{breaker.Open, "open"},
		{breaker.State(9), "State(9)"},
		{breaker.Success, "success"},
		{breaker.Failure, "failure"},
		{breaker.Ignore, "ignore"},
		{breaker.Outcome(0), "Outcome(0)"},
	}
	for _, tt := range tests {
		if got := tt.s.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

// within fails the test if f does not return within a generous wall-clock
// limit; a deadlock would otherwise hang the test binary.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		f()
	}()
	select {
	case <-finished:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not return: deadlock", what)
	}
}

func TestLoggerReentersBreaker(t *testing.T) {
	var b *breaker.Breaker
	var states []breaker.State
	rec := &recorder{onHandle: func(slog.Record) {
		// Under gobreaker's lock these would deadlock.
		states = append(states, b.State())
		_ = b.Stats()
		done, ok := b.Allow()
		if ok {
			done(breaker.Ignore)
		}
	}}
	b, err := breaker.New("node-a", breaker.Config{ConsecutiveFailures: 1, OpenTimeout: time.Millisecond, Logger: slog.New(rec)})
	if err != nil {
		t.Fatal(err)
	}
	within(t, "a re-entrant log handler", func() {
		call(b, breaker.Failure)
		time.Sleep(5 * time.Millisecond)
		call(b, breaker.Success)
	})
	want := []string{"closed->open@WARN", "open->half-open@INFO", "half-open->closed@INFO"}
	if got := rec.transitions(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("logged %v, want %v", got, want)
	}
	if len(states) == 0 || states[0] != breaker.Open {
		t.Errorf("State() inside the first Handle = %v, want open first", states)
	}
}

func TestBlockedLoggerDoesNotStallOthers(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{})
	var once sync.Once
	rec := &recorder{onHandle: func(slog.Record) {
		once.Do(func() {
			close(entered)
			<-release
		})
	}}
	b, err := breaker.New("node-a", breaker.Config{ConsecutiveFailures: 1, Logger: slog.New(rec)})
	if err != nil {
		t.Fatal(err)
	}
	tripped := make(chan struct{})
	go func() {
		defer close(tripped)
		call(b, breaker.Failure) // logs the opening, and blocks in Handle
	}()
	<-entered
	within(t, "the breaker while a log handler blocks", func() {
		for range 100 {
			if b.State() != breaker.Open {
				t.Errorf("State() = %v, want open", b.State())
			}
			if call(b, breaker.Success) {
				t.Errorf("Allow() ok = true while open, want false")
			}
			_ = b.Stats()
		}
	})
	close(release)
	<-tripped
	if got := rec.transitions(); len(got) != 1 {
		t.Errorf("logged %v, want one opening", got)
	}
}

func TestConcurrentCounters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, rec := newBreaker(t, breaker.Config{ConsecutiveFailures: 3, OpenTimeout: 10 * time.Millisecond, HalfOpenProbes: 2})
		var calls, reported atomic.Uint64
		var wg sync.WaitGroup
		for g := range 16 {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(g), 42))
				for i := range 2000 {
					done, ok := b.Allow()
					if ok {
						calls.Add(1)
						var o breaker.Outcome
						switch n := r.IntN(10); {
						case n < 5:
							o = breaker.Success
						case n < 8:
							o = breaker.Failure
						default:
							o = breaker.Ignore
						}
						if r.IntN(4) == 0 {
							// Report from another goroutine, later,
							// possibly after the state has changed.
							delay := time.Duration(r.IntN(3)) * time.Millisecond
							wg.Go(func() {
								time.Sleep(delay)
								done(o)
								reported.Add(1)
							})
						} else {
							done(o)
							reported.Add(1)
						}
					}
					if i%8 == 0 {
						time.Sleep(time.Millisecond)
					}
					_ = b.State()
					_ = b.Stats()
				}
			})
		}
		wg.Wait()

		final := b.State()
		s := b.Stats()
		t.Logf("final state %v, %+v", final, s)
		if s.Allowed != calls.Load() || reported.Load() != calls.Load() {
			t.Errorf("Stats().Allowed = %d, want %d calls, %d reported", s.Allowed, calls.Load(), reported.Load())
		}
		if sum := s.Successes + s.Failures + s.Ignored; s.Allowed != sum {
			t.Errorf("Allowed = %d, want Successes+Failures+Ignored = %d (%+v)", s.Allowed, sum, s)
		}
		if s.Allowed+s.Rejected != 16*2000 {
			t.Errorf("Allowed+Rejected = %d, want %d", s.Allowed+s.Rejected, 16*2000)
		}
		// Every half-opening follows an opening; the last opening has not
		// half-opened exactly when the breaker is still open.
		wantHalf := s.ToOpen
		if final == breaker.Open {
			wantHalf--
		}
		if s.ToHalfOpen != wantHalf || s.ToClosed > s.ToHalfOpen {
			t.Errorf("final state %v with %+v: transitions do not chain", final, s)
		}
		if s.ToOpen == 0 || s.ToClosed == 0 {
			t.Errorf("Stats() = %+v: the test never opened and closed the breaker", s)
		}
		if got, want := uint64(len(rec.transitions())), s.ToOpen+s.ToHalfOpen+s.ToClosed; got != want {
			t.Errorf("logged %d transitions, want %d (each exactly once)", got, want)
		}
	})
}

// TestPeekChangesNothing: Peek reports an expired open breaker as
// half-open without moving it there or logging (a metrics scrape called
// State, which half-opened the breaker and logged the change).
func TestPeekChangesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = time.Second
		b, rec := newBreaker(t, breaker.Config{ConsecutiveFailures: 1, OpenTimeout: timeout})
		if got := b.Peek(); got != breaker.Closed {
			t.Errorf("Peek() of a new breaker = %v, want closed", got)
		}
		trip(t, b)
		if got := b.Peek(); got != breaker.Open {
			t.Errorf("Peek() after the trip = %v, want open", got)
		}
		time.Sleep(2 * timeout)
		for range 3 {
			if got := b.Peek(); got != breaker.HalfOpen {
				t.Errorf("Peek() after OpenTimeout = %v, want half-open", got)
			}
		}
		want := []string{"closed->open@WARN"}
		if got := rec.transitions(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("after Peek, logged %v, want %v", got, want)
		}
		if s := b.Stats(); s.ToHalfOpen != 0 {
			t.Errorf("Peek moved the breaker: %d transitions to half-open", s.ToHalfOpen)
		}
		done, ok := b.Allow()
		if !ok {
			t.Fatal("probe refused")
		}
		done(breaker.Success)
		if got := b.Peek(); got != breaker.Closed {
			t.Errorf("Peek() after a good probe = %v, want closed", got)
		}
	})
}

// TestOpensOnFailureRatio: a node that fails often, but never
// ConsecutiveFailures times in a row, opens the breaker once FailureRatio
// of MinCalls outcomes in the window failed; a new window forgets them.
func TestOpensOnFailureRatio(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := newBreaker(t, breaker.Config{ConsecutiveFailures: 5, FailureRatio: 0.5, MinCalls: 10, Window: time.Second})
		// Failure, success in turn: 9 outcomes, 5 failures: too few calls.
		for i := range 9 {
			mustCall(t, b, []breaker.Outcome{breaker.Failure, breaker.Success}[i%2])
		}
		wantState(t, b, breaker.Closed)
		mustCall(t, b, breaker.Success) // 10 calls, 5 failures: only a failure trips
		wantState(t, b, breaker.Closed)
		mustCall(t, b, breaker.Failure) // 11 calls, 6 failures
		wantState(t, b, breaker.Open)

		// A healthy node with rare failures never trips, window after window.
		b2, _ := newBreaker(t, breaker.Config{MinCalls: 10, Window: time.Second})
		for i := range 200 {
			o := breaker.Success
			if i%4 == 0 {
				o = breaker.Failure
			}
			mustCall(t, b2, o)
			if i%50 == 49 {
				time.Sleep(time.Second) // a new window
			}
		}
		wantState(t, b2, breaker.Closed)
	})
}
