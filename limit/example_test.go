package limit_test

import (
	"fmt"
	"time"

	"github.com/hybridlimit/hybridlimit/limit"
)

// A token bucket of 10 per second with a burst of 3 admits three requests at
// once, then denies until a token has refilled.
func ExampleTake() {
	l := limit.Limit{Rate: 10, Period: time.Second, Burst: 3}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	var s limit.State // a key never seen: a full bucket
	for range 4 {
		var d limit.Decision
		var err error
		s, d, err = limit.Take(s, l, now, 1)
		if err != nil {
			panic(err)
		}
		fmt.Printf("allowed=%v remaining=%d retry-after=%v\n", d.Allowed, d.Remaining, d.RetryAfter)
	}
	// Waiting RetryAfter is enough for the same request.
	now = now.Add(100 * time.Millisecond)
	_, d, _ := limit.Take(s, l, now, 1)
	fmt.Printf("after 100ms: allowed=%v remaining=%d\n", d.Allowed, d.Remaining)
	// Output:
	// allowed=true remaining=2 retry-after=0s
	// allowed=true remaining=1 retry-after=0s
	// allowed=true remaining=0 retry-after=0s
	// allowed=false remaining=0 retry-after=100ms
	// after 100ms: allowed=true remaining=0
}

// Two limits of one key, 100 per minute and 1000 per hour, are charged
// together or not at all. The per-minute limit binds first. Spending the whole
// minute's budget every minute, 1100 units by 10m0s, leaves the hourly bucket
// 83 tokens at 11m0s: it binds, and its missing 17 take a minute to refill.
func ExampleTakeAll() {
	limits := []limit.Limit{limit.PerMinute(100), limit.PerHour(1000)}
	states := make([]limit.State, len(limits))
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

	d, i, _ := limit.TakeAll(states, limits, start, 100)
	fmt.Printf("%v: allowed=%v remaining=%d binding=%v\n", 0*time.Minute, d.Allowed, d.Remaining, limits[i])
	d, i, _ = limit.TakeAll(states, limits, start, 1)
	fmt.Printf("%v: allowed=%v retry-after=%v binding=%v\n", 0*time.Minute, d.Allowed, d.RetryAfter, limits[i])

	// Spend the full minute's budget every minute.
	for m := 1; m <= 20; m++ {
		at := time.Duration(m) * time.Minute
		d, i, _ = limit.TakeAll(states, limits, start.Add(at), 100)
		if !d.Allowed {
			fmt.Printf("%v: allowed=%v retry-after=%v binding=%v\n", at, d.Allowed, d.RetryAfter, limits[i])
			break
		}
	}
	// Output:
	// 0s: allowed=true remaining=0 binding=TokenBucket(100/1m0s, burst 100)
	// 0s: allowed=false retry-after=600ms binding=TokenBucket(100/1m0s, burst 100)
	// 11m0s: allowed=false retry-after=1m0s binding=TokenBucket(1000/1h0m0s, burst 1000)
}

// A leaky bucket shapes a burst instead of denying it: each admitted request
// gets the Delay after which acting on it keeps the output at 10 per second.
// A request that does not fit in the queue of 5 is denied.
func ExampleTake_leakyBucket() {
	l := limit.Limit{Algorithm: limit.LeakyBucket, Rate: 10, Period: time.Second, Burst: 5}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	var s limit.State
	for range 6 {
		var d limit.Decision
		s, d, _ = limit.Take(s, l, now, 1)
		if d.Allowed {
			fmt.Printf("allowed, delay %v\n", d.Delay)
		} else {
			fmt.Printf("denied, retry after %v\n", d.RetryAfter)
		}
	}
	// Output:
	// allowed, delay 0s
	// allowed, delay 100ms
	// allowed, delay 200ms
	// allowed, delay 300ms
	// allowed, delay 400ms
	// denied, retry after 100ms
}
