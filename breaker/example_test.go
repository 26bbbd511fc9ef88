package breaker_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/hybridlimit/hybridlimit/breaker"
)

// errNotFound stands for an error that is an answer, such as redis.Nil.
var errNotFound = errors.New("not found")

func Example() {
	// A logger without timestamps, so that the output is reproducible.
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	b, err := breaker.New("redis-a", breaker.Config{
		ConsecutiveFailures: 2,
		OpenTimeout:         time.Minute,
		Logger:              logger,
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	// call stands for a remote call to a node that is down.
	call := func(context.Context) error { return errors.New("connection refused") }
	isAnswer := func(err error) bool { return errors.Is(err, errNotFound) }

	parent := context.Background()
	for range 3 {
		done, ok := b.Allow()
		if !ok {
			fmt.Println("rejected: answer locally")
			continue
		}
		ctx, cancel := context.WithTimeout(parent, 50*time.Millisecond)
		outcome := breaker.Classify(parent, call(ctx), isAnswer)
		cancel()
		done(outcome)
		fmt.Println("called:", outcome)
	}
	// After a minute, one successful probe would close it again.
	fmt.Println("state:", b.State())
	fmt.Printf("%+v\n", b.Stats())

	// Output:
	// called: failure
	// level=WARN msg="breaker: state changed" node=redis-a from=closed to=open seq=1 counts.allowed=2 counts.rejected=0 counts.successes=0 counts.failures=2 counts.ignored=0
	// called: failure
	// rejected: answer locally
	// state: open
	// {Allowed:2 Rejected:1 Successes:0 Failures:2 Ignored:0 ToOpen:1 ToHalfOpen:0 ToClosed:0}
}

func ExampleClassify() {
	isAnswer := func(err error) bool { return errors.Is(err, errNotFound) }

	parent := context.Background()
	fmt.Println(breaker.Classify(parent, nil, isAnswer))
	fmt.Println(breaker.Classify(parent, errNotFound, isAnswer))
	// Our own per-call timeout expired: the node was too slow.
	fmt.Println(breaker.Classify(parent, context.DeadlineExceeded, isAnswer))

	// The caller gave up: whatever the error, it says nothing of the node.
	cancelled, cancel := context.WithCancel(parent)
	cancel()
	fmt.Println(breaker.Classify(cancelled, context.Canceled, isAnswer))

	// Output:
	// success
	// success
	// failure
	// ignore
}
