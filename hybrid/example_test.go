package hybrid_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/hybridlimit/hybridlimit/hybrid"
	"github.com/hybridlimit/hybridlimit/remote"
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

// Two instances of a service, each with its own Limiter on the same Redis
// node, share one budget per key: what one admits, the other cannot.
func Example_sharedLimit() {
	m, stop := startRedis()
	defer stop()
	newInstance := func() *hybrid.Limiter {
		lim, err := hybrid.New(hybrid.Config{Addrs: []string{m.Addr()}, Timeout: time.Second})
		if err != nil {
			log.Fatal(err)
		}
		return lim
	}
	a, b := newInstance(), newInstance()
	defer a.Close()
	defer b.Close()

	ctx := context.Background()
	perMinute := hybrid.PerMinute(3)
	for _, lim := range []*hybrid.Limiter{a, a, b, b} {
		res, err := lim.Allow(ctx, "user:42", perMinute)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(res.Allowed, res.Remaining)
	}
	// Output:
	// true 2
	// true 1
	// true 0
	// false 0
}

// A limit read from configuration carries a Name: its state in Redis is
// keyed by the name, so a client's budget survives a change of rate.
func ExampleLimit_name() {
	m, stop := startRedis()
	defer stop()
	lim, err := hybrid.New(hybrid.Config{Addrs: []string{m.Addr()}, Timeout: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer lim.Close()
	ctx := context.Background()

	api := hybrid.Limit{Rate: 100, Period: time.Minute, Name: "api"}
	r, _ := lim.AllowN(ctx, "user:42", 80, api)
	fmt.Println("100/min:", r.Allowed, r.Remaining)

	// The configuration lowers the limit to 50: the 80 units in use stay
	// in use, at most the new capacity, so the client is out of budget.
	api.Rate = 50
	r, _ = lim.Allow(ctx, "user:42", api)
	fmt.Println("50/min:", r.Allowed, r.Remaining)

	// Raised to 200: 150 left, as the lower limit held 50.
	api.Rate = 200
	r, _ = lim.Allow(ctx, "user:42", api)
	fmt.Println("200/min:", r.Allowed, r.Remaining)
	// Output:
	// 100/min: true 20
	// 50/min: false 0
	// 200/min: true 149
}

// What a Limiter answers while a key's node cannot decide, in each mode:
// Fallback (the default) enforces each limit × FallbackShare in process,
// FailOpen allows, FailClosed denies. Result.Source says which answered.
func ExampleFailureMode() {
	for _, mode := range []hybrid.FailureMode{hybrid.Fallback, hybrid.FailOpen, hybrid.FailClosed} {
		m, err := miniredis.Run()
		if err != nil {
			log.Fatal(err)
		}
		lim, err := hybrid.New(hybrid.Config{
			Addrs:         []string{m.Addr()},
			Timeout:       time.Second,
			OnFailure:     mode,
			FallbackShare: 0.5, // with 2 instances, each enforces half of each limit
			Logger:        slog.New(slog.DiscardHandler),
		})
		if err != nil {
			log.Fatal(err)
		}
		m.Close() // the node goes away

		fmt.Println(mode)
		for range 3 {
			res, err := lim.Allow(context.Background(), "user:42", hybrid.PerMinute(4))
			if err != nil {
				log.Fatal(err) // Redis errors never come here
			}
			fmt.Println(" ", res.Allowed, res.Source, res.RetryAfter > 0)
		}
		lim.Close()
	}
	// Output:
	// Fallback
	//   true fallback false
	//   true fallback false
	//   false fallback true
	// FailOpen
	//   true fail-open false
	//   true fail-open false
	//   true fail-open false
	// FailClosed
	//   false fail-closed true
	//   false fail-closed true
	//   false fail-closed true
}

// Nodes built by the caller: a Redis Cluster as one node of the ring, a
// Sentinel group, and a plain server with AUTH. The Sentinel and plain
// clients are built with remote's bounded options (no retries, short
// timeouts). Of a Cluster client the Limiter takes only the connection
// settings: it reads the slot map, routes over bounded connections of its
// own to each master (closed by lim.Close), follows MOVED, ASK and
// TRYAGAIN, and keeps a breaker per master, so the client the service
// already has will do. Every instance must give the same names to the
// same nodes.
func ExampleNode() {
	cluster := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: []string{"10.0.1.1:7000", "10.0.1.2:7000", "10.0.1.3:7000"},
	})
	sentinel := redis.NewFailoverClient(remote.BoundFailoverOptions(&redis.FailoverOptions{
		MasterName:    "limits",
		SentinelAddrs: []string{"10.0.2.1:26379", "10.0.2.2:26379", "10.0.2.3:26379"},
	}))
	single := redis.NewClient(remote.BoundOptions(&redis.Options{
		Addr:     "10.0.3.1:6379",
		Username: "limiter",
		Password: "secret",
	}))
	lim, err := hybrid.New(hybrid.Config{Nodes: []hybrid.Node{
		{Name: "cluster-a", Client: cluster},
		{Name: "limits", Client: sentinel},
		{Name: "single-1", Client: single},
	}})
	if err != nil {
		log.Fatal(err) // ErrMisconfigured: a password, ACL or TLS refusal
	}
	defer lim.Close() // the Limiter does not close clients it did not build
	defer cluster.Close()
	defer sentinel.Close()
	defer single.Close()
}

// A service of millions of clients keeps their states in the compact
// layout: fields of hashes that about 32 clients share, a quarter of the
// memory of a key each, sized for the clients that decide within an hour.
// Its decisions are the default layout's.
func ExampleLayout() {
	m, stop := startRedis()
	defer stop()
	lim, err := hybrid.New(hybrid.Config{
		Addrs:   []string{m.Addr()},
		Layout:  hybrid.Layout{Compact: true, Keys: 10_000_000},
		Timeout: time.Second,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer lim.Close()

	ctx := context.Background()
	seed := []hybrid.Limit{hybrid.PerMinute(100), hybrid.PerHour(1000)}
	res, err := lim.AllowN(ctx, "user:42", 100, seed...)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Allowed, res.Remaining)
	res, err = lim.AllowN(ctx, "user:42", 1, seed...)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Allowed, res.RetryAfter > 0)
	// The client's two states are fields of two hashes, one per limit,
	// under its bucket's tag ("rl:{{c1#<bucket>}:tb:100:1m:<g>").
	n := 0
	for _, k := range m.Keys() {
		if strings.Contains(k, "{c1#") {
			n++
		}
	}
	fmt.Println(n, "hashes")
	// Output:
	// true 0
	// false true
	// 2 hashes
}
