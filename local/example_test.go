package local_test

import (
	"fmt"
	"time"

	"github.com/hybridlimit/hybridlimit/limit"
	"github.com/hybridlimit/hybridlimit/local"
)

// clock returns a fixed instant and a function that moves it forward, for
// hermetic examples.
func clock() (now func() time.Time, advance func(time.Duration)) {
	t := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	return func() time.Time { return t }, func(d time.Duration) { t = t.Add(d) }
}

func Example() {
	now, advance := clock()
	l, err := local.New(local.Config{Now: now})
	if err != nil {
		panic(err)
	}
	perSecond := limit.PerSecond(2)
	for range 3 {
		d, err := l.Allow("user:42", perSecond)
		if err != nil {
			panic(err)
		}
		fmt.Printf("allowed=%v remaining=%d retry-after=%v\n", d.Allowed, d.Remaining, d.RetryAfter)
	}
	advance(500 * time.Millisecond)
	d, _ := l.Allow("user:42", perSecond)
	fmt.Printf("500ms later: allowed=%v remaining=%d\n", d.Allowed, d.Remaining)
	// Output:
	// allowed=true remaining=1 retry-after=0s
	// allowed=true remaining=0 retry-after=0s
	// allowed=false remaining=0 retry-after=500ms
	// 500ms later: allowed=true remaining=0
}

// Several limits are decided together: a request is charged to all of them
// or to none, and the Decision is the binding limit's.
func ExampleLimiter_AllowN() {
	now, advance := clock()
	l, err := local.New(local.Config{Now: now})
	if err != nil {
		panic(err)
	}
	burst := limit.PerSecond(10)
	daily := limit.Limit{Algorithm: limit.FixedWindow, Rate: 12, Period: 24 * time.Hour}
	request := func(cost int64) {
		d, err := l.AllowN("api-token:7", cost, burst, daily)
		if err != nil {
			panic(err)
		}
		fmt.Printf("cost %d: allowed=%v remaining=%d retry-after=%v\n", cost, d.Allowed, d.Remaining, d.RetryAfter)
	}
	request(8)
	request(3) // the burst denies; the daily limit is not charged either
	advance(time.Second)
	request(5) // the daily limit denies
	request(4)
	// Output:
	// cost 8: allowed=true remaining=2 retry-after=0s
	// cost 3: allowed=false remaining=2 retry-after=100ms
	// cost 5: allowed=false remaining=4 retry-after=11h59m59s
	// cost 4: allowed=true remaining=0 retry-after=0s
}

func ExampleLimiter_AllowN_badInput() {
	l, err := local.New(local.Config{})
	if err != nil {
		panic(err)
	}
	_, err = l.AllowN("user:42", 20, limit.PerSecond(10))
	fmt.Println(err)
	_, err = l.AllowN("", 1, limit.PerSecond(10))
	fmt.Println(err)
	// Output:
	// local: limits[0]: limit: cost exceeds the limit's capacity: cost 20, capacity 10 of TokenBucket(10/1s, burst 10)
	// local: invalid key: empty
}

// A lease takes a batch of units at once; the unused ones go back.
func ExampleLimiter_Lease() {
	now, _ := clock()
	l, err := local.New(local.Config{Now: now})
	if err != nil {
		panic(err)
	}
	perMinute := limit.PerMinute(100)
	leaseAt := now()
	granted, d, _, err := l.LeaseAt("user:42", leaseAt, 30, perMinute)
	if err != nil {
		panic(err)
	}
	fmt.Printf("granted %d, %d left\n", granted, d.Remaining)
	l.GiveBack("user:42", leaseAt, 12, perMinute) // 18 were used
	d, _ = l.Allow("user:42", perMinute)
	fmt.Printf("after giving 12 back and one request: %d left\n", d.Remaining)
	// Output:
	// granted 30, 70 left
	// after giving 12 back and one request: 81 left
}

// Entries whose state no longer matters are dropped by Sweep (and, a few at
// a time, as new keys arrive).
func ExampleLimiter_Sweep() {
	now, advance := clock()
	l, err := local.New(local.Config{Now: now})
	if err != nil {
		panic(err)
	}
	l.Allow("user:1", limit.PerSecond(10))
	l.Allow("user:2", limit.PerHour(10))
	fmt.Println(l.Len())
	advance(time.Second) // user:1's bucket is full again
	l.Sweep()
	fmt.Println(l.Len())
	// Output:
	// 2
	// 1
}
