package hybrid_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/hybridlimit/hybridlimit/hybrid"
)

// startRedis starts an in-process Redis for the examples; a service passes
// the addresses of its real nodes instead.
func startRedis() (*miniredis.Miniredis, func()) {
	m, err := miniredis.Run()
	if err != nil {
		log.Fatal(err)
	}
	return m, m.Close
}

func ExampleNew() {
	a, stopA := startRedis()
	defer stopA()
	b, stopB := startRedis()
	defer stopB()

	// A Timeout above the default 50 ms keeps this output stable on a busy
	// test machine; a service keeps the default.
	lim, err := hybrid.New(hybrid.Config{Addrs: []string{a.Addr(), b.Addr()}, Timeout: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer lim.Close()
	fmt.Println(len(lim.Stats().Nodes), "nodes")
	// Output: 2 nodes
}

func ExampleLimiter_Allow() {
	m, stop := startRedis()
	defer stop()
	lim, err := hybrid.New(hybrid.Config{Addrs: []string{m.Addr()}, Timeout: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer lim.Close()

	ctx := context.Background()
	for i := 0; i < 4; i++ {
		res, err := lim.Allow(ctx, "user:42", hybrid.PerMinute(3))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(res.Allowed, res.Remaining, res.RetryAfter > 0, res.Source)
	}
	// Output:
	// true 2 false remote
	// true 1 false remote
	// true 0 false remote
	// false 0 true remote
}

func ExampleLimiter_AllowN() {
	m, stop := startRedis()
	defer stop()
	lim, err := hybrid.New(hybrid.Config{Addrs: []string{m.Addr()}, Timeout: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer lim.Close()

	// 100 per minute and 120 per hour, charged together: a request that
	// either would deny charges neither.
	ctx := context.Background()
	minute, hour := hybrid.PerMinute(100), hybrid.PerHour(120)
	res, err := lim.AllowN(ctx, "api-key:7f3a", 90, minute, hour)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Allowed, res.Remaining, res.Limit == minute)
	res, err = lim.AllowN(ctx, "api-key:7f3a", 20, minute, hour)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Allowed, res.Remaining, res.Limit == minute)
	// Output:
	// true 10 true
	// false 10 true
}

func ExampleLimiter_Wait() {
	m, stop := startRedis()
	defer stop()
	lim, err := hybrid.New(hybrid.Config{Addrs: []string{m.Addr()}, Timeout: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer lim.Close()

	// Ten per second, a burst of one: the second Wait sleeps about 100ms.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l := hybrid.Limit{Rate: 10, Period: time.Second, Burst: 1}
	for i := 0; i < 2; i++ {
		if err := lim.Wait(ctx, "job-queue", l); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println("both admitted")
	// Output: both admitted
}

// A batch job takes what it may of an hourly quota, gives back what it did
// not use, and an operator clears a client's state.
func ExampleLimiter_AllowAtMost() {
	m, stop := startRedis()
	defer stop()
	lim, err := hybrid.New(hybrid.Config{Addrs: []string{m.Addr()}, Timeout: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer lim.Close()
	ctx := context.Background()
	quota := hybrid.PerHour(100)

	r, err := lim.AllowAtMost(ctx, "job:7", 80, quota) // up to 80 units
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("granted", r.Granted, "remaining", r.Remaining)
	r, _ = lim.AllowAtMost(ctx, "job:7", 80, quota) // only 20 are left
	fmt.Println("granted", r.Granted, "remaining", r.Remaining)

	// The job used 90 of the 100: 10 go back.
	if err := lim.Refund(ctx, "job:7", 10, quota); err != nil {
		log.Fatal(err)
	}
	p, _ := lim.Peek(ctx, "job:7", quota) // what Allow would say; takes nothing
	fmt.Println("peek", p.Allowed, "remaining after one more", p.Remaining)

	if err := lim.Reset(ctx, "job:7", quota); err != nil {
		log.Fatal(err)
	}
	p, _ = lim.Peek(ctx, "job:7", quota)
	fmt.Println("after reset, remaining after one more", p.Remaining)
	// Output:
	// granted 80 remaining 20
	// granted 20 remaining 0
	// peek true remaining after one more 9
	// after reset, remaining after one more 99
}
