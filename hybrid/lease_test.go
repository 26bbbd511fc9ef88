package hybrid

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
)

func TestLeaseServesHotKey(t *testing.T) {
	srv := redistest.Start(t)
	lim, err := New(Config{Addrs: []string{srv.Addr()}, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer lim.Close()
	ctx := context.Background()
	l := PerSecond(100_000)
	bySource := map[Source]int{}
	for i := 0; i < 5000; i++ {
		r, err := lim.Allow(ctx, "hot", l)
		if err != nil || !r.Allowed {
			t.Fatalf("Allow #%d = %+v, %v", i, r, err)
		}
		bySource[r.Source]++
	}
	st := lim.Stats()
	if bySource[SourceLease] < 4000 {
		t.Errorf("sources %v: want most answers from the lease", bySource)
	}
	if st.Nodes[0].Calls > 500 {
		t.Errorf("%d round trips for 5000 decisions, want far fewer", st.Nodes[0].Calls)
	}
	if st.Leases != 1 || st.LeaseUnits > 1000 {
		t.Errorf("Stats: %d leases holding %d units; want 1 lease of at most 1%% of 100,000", st.Leases, st.LeaseUnits)
	}
	t.Logf("5000 decisions: %v, %d round trips, %d units outstanding", bySource, st.Nodes[0].Calls, st.LeaseUnits)
}

// TestLeaseBadInputConsumesNothing: a lease is spent before a request is
// validated, so bad input for a key holding one must still be refused and
// leave the lease as it was.
func TestLeaseBadInputConsumesNothing(t *testing.T) {
	lim, _ := newMini(t, 1, Config{Timeout: 2 * time.Second})
	ctx := context.Background()
	l := PerSecond(100_000)
	for i := 0; i < 2000 && lim.Stats().Leases == 0; i++ {
		if _, err := lim.Allow(ctx, "hot", l); err != nil {
			t.Fatal(err)
		}
	}
	// A renewal the last spend started would add units meanwhile: wait
	// for it (at most a second).
	if v, ok := lim.leases.entries.Load("hot"); ok {
		for end := time.Now().Add(time.Second); v.(*leaseEntry).renewal.Load() != nil && time.Now().Before(end); {
			time.Sleep(time.Millisecond)
		}
	}
	before := lim.Stats()
	if before.Leases != 1 || before.LeaseUnits < 2 {
		t.Fatalf("Stats %+v: want one lease holding units", before)
	}
	bad := []struct {
		n      int64
		limits []Limit
		want   error
	}{
		{0, []Limit{l}, ErrInvalidCost},
		{-5, []Limit{l}, ErrInvalidCost},
		{-before.LeaseUnits, []Limit{l}, ErrInvalidCost},
		{100_001, []Limit{l}, ErrCostExceedsLimit},
		{1, []Limit{l, l}, ErrInvalidLimit},
		{1, []Limit{{Rate: 100_000, Period: time.Second, Burst: -1}}, ErrInvalidLimit},
		{1, nil, ErrInvalidLimit},
	}
	for _, b := range bad {
		if _, err := lim.AllowN(ctx, "hot", b.n, b.limits...); !errors.Is(err, b.want) {
			t.Errorf("AllowN(hot, %d, %v) = %v, want %v", b.n, b.limits, err, b.want)
		}
	}
	after := lim.Stats()
	if after.LeaseUnits != before.LeaseUnits {
		t.Errorf("lease units %d -> %d after bad input, want unchanged", before.LeaseUnits, after.LeaseUnits)
	}
	if r, err := lim.Allow(ctx, "hot", l); err != nil || r.Source != SourceLease {
		t.Errorf("Allow after bad input = %+v, %v; want an answer from the lease", r, err)
	}
}

// TestLeaseLeakyBucketKeepsShaping: a hot LeakyBucket key is served from a
// lease of queue places, and every admitted request is held as Redis would
// hold it: the k-th release (answer time + Delay) comes no earlier than k
// drain intervals after the start. Bounded: 3,000,000 calls
// or 200 ms.
func TestLeaseLeakyBucketKeepsShaping(t *testing.T) {
	srv := redistest.Start(t)
	lim, err := New(Config{Addrs: []string{srv.Addr()}, Timeout: 2 * time.Second, Lease: LeaseConfig{HotRate: 100, MaxFraction: 0.1}})
	if err != nil {
		t.Fatal(err)
	}
	defer lim.Close()
	ctx := context.Background()
	const burst = 100
	l := Limit{Algorithm: LeakyBucket, Rate: 10_000, Period: time.Second, Burst: burst}
	tick := l.Period / time.Duration(l.Rate)
	var releases []time.Duration
	var sources [numSources]int
	start := time.Now()
	for i := 0; i < 3_000_000 && time.Since(start) < 200*time.Millisecond; i++ {
		r, err := lim.Allow(ctx, "shaped", l)
		if err != nil {
			t.Fatal(err)
		}
		sources[r.Source]++
		if r.Allowed {
			// The caller holds the request for Delay after the answer,
			// as Wait does: a Delay Redis computed counts from Redis's
			// clock, which the answer's travel puts behind ours.
			releases = append(releases, time.Since(start)+r.Delay)
		}
	}
	slices.Sort(releases)
	t.Logf("%d admitted of %v; sources %v", len(releases), time.Since(start), sources)
	if sources[SourceLease] == 0 {
		t.Errorf("no answer from a lease: %v", sources)
	}
	// A leaky bucket's output never exceeds its rate, from the first
	// request on (the queue delays the burst, it does not let it through);
	// Redis's clock and ours differ by a round trip's share: 3 ticks.
	for k, r := range releases {
		if want := time.Duration(k-3) * tick; r < want {
			t.Fatalf("release %d at %v, before %v: the output outran the rate", k, r, want)
		}
	}
}

func TestLeaseGivenBackOnClose(t *testing.T) {
	srv := redistest.Start(t)
	lim, err := New(Config{Addrs: []string{srv.Addr()}, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	l := PerHour(1_000_000)
	start := time.Now()
	for i := 0; i < 2000; i++ {
		if _, err := lim.Allow(ctx, "k", l); err != nil {
			t.Fatal(err)
		}
	}
	if lim.Stats().LeaseUnits == 0 {
		t.Skip("no lease held at the end of the loop; nothing to give back")
	}
	if err := lim.Close(); err != nil {
		t.Fatal(err)
	}
	// A fresh limiter sees exactly the 2000 units spent: the rest came back.
	lim2, err := New(Config{Addrs: []string{srv.Addr()}, Timeout: 2 * time.Second, Lease: LeaseConfig{Disable: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer lim2.Close()
	r, err := lim2.Allow(ctx, "k", l)
	if err != nil {
		t.Fatal(err)
	}
	// The bucket refills at 1e6/h meanwhile: allow for that much.
	refill := int64(time.Since(start).Seconds()*1_000_000/3600) + 1
	if used := 1_000_000 - r.Remaining - 1; used < 2000-refill || used > 2000 {
		t.Errorf("Redis counts %d units used after 2000 decisions and Close; want 2000 less at most %d refilled (the unused lease given back)", used, refill)
	}
}

// TestLeaseAccuracy: 4 instances (and 1 with 64 callers) on the same 3 nodes drive one hot key far
// over 10,000/s as fast as they can, for each of the five algorithms: the
// total admitted stays within [99%, 100%] of a single ideal limiter, plus
// at most the units outstanding in leases (LeaseUnits, summed); no leased
// unit is lost (LeaseUnitsLost); at most 0.01 Redis calls per decision (on
// the code before waiting leases, TokenBucket 0.07-0.08 and LeakyBucket
// 0.09, at 130 K decisions/s: the key went to Redis as soon as its lease
// ran dry); and once the load stops a denial's RetryAfter is truthful.
// 64 callers, each call to the next instance, as bench's. About 2.5 s per
// algorithm.
func TestLeaseAccuracy(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for seconds")
	}
	for _, tc := range []struct {
		name               string
		limit              Limit
		instances, callers int
	}{
		{"TokenBucket", PerSecond(10_000), 4, 64},
		{"LeakyBucket", Limit{Algorithm: LeakyBucket, Rate: 10_000, Period: time.Second}, 4, 64},
		{"FixedWindow", Limit{Algorithm: FixedWindow, Rate: 10_000, Period: time.Second}, 4, 64},
		{"SlidingWindowLog", Limit{Algorithm: SlidingWindowLog, Rate: 10_000, Period: time.Second}, 4, 64},
		{"SlidingWindowCounter", Limit{Algorithm: SlidingWindowCounter, Rate: 10_000, Period: time.Second}, 4, 64},
		// Many callers find the hot key unleased at once: one take, not
		// 64 (which left 9 units in 10 of every window unused).
		{"FixedWindow/1-instance-64-callers", Limit{Algorithm: FixedWindow, Rate: 10_000, Period: time.Second}, 1, 64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Up to two retries, for a starved machine only: a waiting
			// lease (over the limit) denies in process until its poll,
			// and takes what refilled meanwhile at the poll. When its
			// renewals run late (-race with two CPU hogs on 2 cores:
			// 300 K requests/s), the refill is taken that much later,
			// and at the end of the run up to a few hundred units are
			// still in Redis, not yet asked for: TokenBucket 96.5-97.4 %
			// of the ideal in 2 of 3 such runs, 99.0 % in the third;
			// 99.7 % on a quiet machine. Three in a row failing is a
			// fault. Every run is logged.
			for run := 1; ; run++ {
				problem := leaseAccuracyRun(t, tc.limit, tc.instances, tc.callers)
				if problem == "" {
					break
				}
				if run == 3 {
					t.Error(problem)
					break
				}
				t.Logf("run %d: %s; running again", run, problem)
			}
		})
	}
}

// leaseAccuracyRun runs the accuracy measurement once and returns what is
// wrong with it, or "".
func leaseAccuracyRun(t *testing.T, lim0 Limit, instances, callers int) string {
	tc := struct {
		name  string
		limit Limit
	}{lim0.Algorithm.String(), lim0}
	srv := redistest.StartN(t, 3)
	var addrs []string
	for _, s := range srv {
		addrs = append(addrs, s.Addr())
	}
	var lims []*Limiter
	for i := 0; i < instances; i++ {
		lim, err := New(Config{Addrs: addrs, Timeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		lims = append(lims, lim)
	}
	ctx := context.Background()
	const run = 2500 * time.Millisecond
	var admitted, maxOutstanding, requests atomic.Int64
	var perSecond [16]atomic.Int64 // requests by Unix second, for FixedWindow
	start := time.Now()
	deadline := start.Add(run)
	var wg sync.WaitGroup
	for w := 0; w < callers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each call goes to the next instance, as bench's callers do.
			for i := 0; i < 5_000_000 && time.Now().Before(deadline); i++ {
				lim := lims[(w+i)%len(lims)]
				now := time.Now()
				r, err := lim.Allow(ctx, "hot", tc.limit)
				requests.Add(1)
				perSecond[(now.Unix()-start.Unix())%16].Add(1)
				if err != nil {
					t.Error(err)
					return
				}
				if r.Allowed {
					admitted.Add(1)
				}
			}
		}()
	}
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			var out int64
			for _, lim := range lims {
				out += lim.Stats().LeaseUnits
			}
			if out > maxOutstanding.Load() {
				maxOutstanding.Store(out)
			}
		}
	}()
	wg.Wait()
	end := time.Now()
	close(stop)
	// Units held in leases when the load stopped: admissions the instances
	// took from Redis and had no request left to spend on (the stated
	// under-admission bound, given back at Close).
	var stranded int64
	for _, lim := range lims {
		stranded += lim.Stats().LeaseUnits
	}
	var leased, calls, lost int64
	mix := map[Source]int64{}
	for _, lim := range lims {
		st := lim.Stats()
		for src, n := range st.Decisions {
			mix[src] += n
		}
		for _, ns := range st.Nodes {
			calls += ns.Calls
		}
		lost += st.LeaseUnitsLost
	}
	// A denial's RetryAfter, once the load has stopped, is truthful: the
	// same request then is admitted.
	retry := ""
	if r, err := lims[0].Allow(ctx, "hot", tc.limit); err == nil && !r.Allowed {
		time.Sleep(r.RetryAfter)
		if r2, err := lims[0].Allow(ctx, "hot", tc.limit); err != nil || !r2.Allowed {
			retry = fmt.Sprintf("denied %+v, then at its RetryAfter %+v, %v", r, r2, err)
		}
	}
	for _, lim := range lims {
		lim.Close()
	}
	leased = mix[SourceLease]
	// The ideal single limiter, given the demand there was:
	// TokenBucket: burst plus rate × elapsed; FixedWindow: per
	// window, the lesser of its requests and the rate; the sliding
	// counter: between rate × elapsed and rate × (elapsed + 1).
	rate := float64(tc.limit.Rate)
	elapsed := end.Sub(start).Seconds()
	demand := float64(requests.Load())
	var ideal, upper float64
	switch tc.limit.Algorithm {
	case FixedWindow:
		for i := range perSecond {
			ideal += min(float64(perSecond[i].Load()), rate)
		}
		upper = ideal
	case SlidingWindowCounter:
		ideal = min(demand, rate*elapsed)
		upper = rate * (elapsed + 1)
	case SlidingWindowLog:
		// Each unit comes back a period after it was taken.
		ideal = min(demand, rate*math.Floor(elapsed+1))
		upper = ideal
	default:
		ideal = min(demand, float64(tc.limit.Capacity())+rate*elapsed)
		upper = ideal
	}
	got := float64(admitted.Load())
	perCall := float64(calls) / demand
	t.Logf("%s: %.0f requests (%.0f/s), admitted %.0f: %.2f%% of the ideal %.0f (upper bound %.0f), max outstanding lease units %d, %d held at the end, %d lost, %d decisions served from leases, %.5f Redis calls per decision, sources %v",
		tc.name, demand, demand/elapsed, got, 100*got/ideal, ideal, upper, maxOutstanding.Load(), stranded, lost, leased, perCall, mix)
	if perCall > 0.01 {
		return fmt.Sprintf("%.4f Redis calls per decision, want <= 0.01", perCall)
	}
	if lost != 0 {
		return fmt.Sprintf("%d leased units lost", lost)
	}
	if retry != "" {
		return "RetryAfter not truthful: " + retry
	}
	if got > upper+float64(maxOutstanding.Load())+rate*0.005 {
		return fmt.Sprintf("admitted %.0f, above the ideal %.0f plus outstanding %d", got, upper, maxOutstanding.Load())
	}
	if got < 0.99*ideal-float64(stranded) {
		return fmt.Sprintf("admitted %.0f, below 99%% of the ideal %.0f less the %d units held in leases at the end", got, ideal, stranded)
	}
	return ""
}

// TestLeaseCloseDuringTraffic: Close while goroutines spend and renew
// leases: no panic, every call after Close gets ErrClosed, and no goroutine
// is left (goleak in TestMain).
func TestLeaseCloseDuringTraffic(t *testing.T) {
	srv := redistest.Start(t)
	lim, err := New(Config{Addrs: []string{srv.Addr()}, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200_000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := lim.Allow(ctx, "hot", PerSecond(1_000_000)); err != nil && err != ErrClosed {
					t.Error(err)
					return
				}
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	if err := lim.Close(); err != nil {
		t.Error(err)
	}
	close(stop)
	wg.Wait()
	if _, err := lim.Allow(ctx, "hot", PerSecond(1_000_000)); err != ErrClosed {
		t.Errorf("Allow after Close = %v, want ErrClosed", err)
	}
}

// TestLeaseSpendAllocatesNothing: answering from a lease allocates nothing
// (a background renewal, now and then, is averaged away).
func TestLeaseSpendAllocatesNothing(t *testing.T) {
	srv := redistest.Start(t)
	lim, err := New(Config{Addrs: []string{srv.Addr()}, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer lim.Close()
	ctx := context.Background()
	l := PerSecond(1_000_000_000)
	for i := 0; i < 2000; i++ {
		lim.Allow(ctx, "hot", l)
	}
	if r, _ := lim.Allow(ctx, "hot", l); r.Source != SourceLease {
		t.Fatalf("Allow = %+v after 2000 requests, want the lease", r)
	}
	allocs := testing.AllocsPerRun(10_000, func() {
		lim.Allow(ctx, "hot", l)
	})
	if allocs != 0 {
		t.Errorf("an answer from a lease allocates %v times, want 0", allocs)
	}
}

// TestLeaseSlotsCountEveryLease: the counts per slot of the hot-key table
// that spare cold keys a lookup in the lease table (hotSlot.present) count
// every lease in the table, each in its key's slot, once nothing is being
// spent or renewed, while keys are spent from many goroutines, leases
// expire, keys are Reset and the ring changes (which ends leases while they
// are being taken); and so does Stats.Leases.
func TestLeaseSlotsCountEveryLease(t *testing.T) {
	lim, _ := newMini(t, 2, Config{Lease: LeaseConfig{HotRate: 1, TTL: 30 * time.Millisecond}})
	extra := miniredis.RunT(t)
	xc := redis.NewClient(&redis.Options{Addr: extra.Addr()})
	t.Cleanup(func() { xc.Close() })
	ctx := context.Background()
	lims := []Limit{PerSecond(100_000), PerMinute(50_000)}
	// mismatch compares the slot counts and Stats.Leases with the table
	// once; "" when they agree.
	mismatch := func() string {
		want := make(map[uint64]int32)
		n := 0
		lim.leases.entries.Range(func(k, _ any) bool {
			want[lim.leases.hash(k.(string))%hotRow]++
			n++
			return true
		})
		for i := range lim.leases.slots {
			if got := lim.leases.slots[i].present.Load(); got != want[uint64(i)] {
				return fmt.Sprintf("slot %d counts %d leases, the table holds %d there", i, got, want[uint64(i)])
			}
		}
		if got := lim.Stats().Leases; got != n {
			return fmt.Sprintf("Stats.Leases = %d, the table holds %d", got, n)
		}
		return ""
	}
	settled := func(what string) {
		t.Helper()
		// Renewals, give-backs and the sweep of expired leases run in the
		// background, and the sweep may end a lease between the table's
		// walk and the counts' reads: compare until the two agree, for at
		// most 5 s (every lease has expired by then). A count that missed
		// a lease's end never agrees again.
		deadline := time.Now().Add(5 * time.Second)
		for {
			busy := false
			lim.leases.entries.Range(func(_, v any) bool {
				busy = busy || v.(*leaseEntry).renewal.Load() != nil
				return !busy
			})
			m := "renewals in flight"
			if !busy {
				if m = mismatch(); m == "" {
					return
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s", what, m)
			}
			time.Sleep(time.Millisecond)
		}
	}
	var leased atomic.Int64
	for round := range 6 {
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range 400 {
					key := fmt.Sprintf("k%d", (g+i)%16)
					r, err := lim.AllowN(ctx, key, 1+int64(i%3), lims[i%2])
					if err != nil {
						t.Error(err)
						return
					}
					if r.Source == SourceLease {
						leased.Add(1)
					}
					if i%97 == 0 {
						if err := lim.Reset(ctx, key, lims[i%2]); err != nil {
							t.Error(err)
							return
						}
					}
				}
			})
		}
		if round%2 == 1 {
			// Ring changes while keys are being leased.
			if err := lim.AddNode(Node{Name: "extra", Client: xc}); err != nil {
				t.Fatal(err)
			}
			if err := lim.RemoveNode("extra"); err != nil {
				t.Fatal(err)
			}
		}
		wg.Wait()
		settled(fmt.Sprintf("round %d", round))
		if round == 2 {
			time.Sleep(60 * time.Millisecond) // past the TTL: leases expire
			settled("after the TTL")
		}
	}
	if leased.Load() == 0 {
		t.Fatal("no decision came from a lease: the test checked nothing")
	}
}

// TestGiveBacksShareRoundTrips: the give-backs of leases that end together
// travel in the node's batches, not in a round trip each, and every unit
// reaches Redis. 200 keys leased at once expire together; Close waits for
// their give-backs, whose round trips are then counted.
func TestGiveBacksShareRoundTrips(t *testing.T) {
	srv := redistest.Start(t)
	const keys, used = 200, 3
	l := PerHour(60_000) // a lease holds 1%: 600 units, 17 refilled per second
	lim, err := New(Config{Addrs: []string{srv.Addr()}, Timeout: 2 * time.Second, DenyCache: DenyCacheConfig{Disable: true},
		Lease: LeaseConfig{HotRate: 1, TTL: 300 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer lim.Close()
	ctx := context.Background()
	for k := range keys {
		for range used {
			if r, err := lim.Allow(ctx, fmt.Sprintf("k%d", k), l); err != nil || !r.Allowed {
				t.Fatalf("Allow = %+v, %v", r, err)
			}
		}
	}
	st := lim.Stats()
	if st.Leases < keys/2 {
		t.Fatalf("%d of %d keys leased, want most", st.Leases, keys)
	}
	rdb := srv.Client(t)
	leased, calls0 := st.Leases, redistest.ScriptCalls(t, rdb)
	for deadline := time.Now().Add(5 * time.Second); lim.Stats().Leases > 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if err := lim.Close(); err != nil { // waits for the give-backs
		t.Fatal(err)
	}
	st = lim.Stats()
	trips := redistest.ScriptCalls(t, rdb) - calls0
	if st.LeaseUnitsLost != 0 {
		t.Fatalf("%d units lost", st.LeaseUnitsLost)
	}
	if trips > int64(leased)/4 {
		t.Errorf("%d script calls gave back %d leases, want them batched (at most %d)", trips, leased, leased/4)
	}
	t.Logf("%d leases given back in %d script calls", leased, trips)

	// Every unit reached Redis: each key has what its three decisions left.
	peek, err := New(Config{Addrs: []string{srv.Addr()}, Timeout: 2 * time.Second, Lease: LeaseConfig{Disable: true}, DenyCache: DenyCacheConfig{Disable: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer peek.Close()
	for k := range keys {
		r, err := peek.Peek(ctx, fmt.Sprintf("k%d", k), l)
		if err != nil {
			t.Fatal(err)
		}
		if r.Remaining < l.Rate-used-1 {
			t.Fatalf("key k%d: %d remaining after %d decisions and the give-back, want at least %d", k, r.Remaining, used, l.Rate-used-1)
		}
	}
}

// TestColdKeysDoNotLookWarm: keys that share the hot-key table's counts
// must not pass for warm keys, whose leases would cost cold keys a lease
// and a give-back each (on the uniform workload, 7% of decisions came from
// such leases, and the run was 5% slower than without warm leasing). Two
// hotWindows in a row of 100,000 keys at 160,000 requests a second, as in
// steady traffic (the second window's requests see the first's counts): a
// request whose demand (demandOf) says WarmRate or more is counted. With
// one row and the busier window, 3.1% of them looked warm; now 0.13%. A
// key asked for as often as one at WarmRate is, in the two windows demand
// counts, is still seen as warm.
func TestColdKeysDoNotLookWarm(t *testing.T) {
	lim, _ := newMini(t, 1, Config{})
	keys := make([]string, 100_000)
	for i := range keys {
		keys[i] = fmt.Sprintf("cold:%d", i)
	}
	perWindow := int(160_000 * hotWindow.Seconds())
	warm := lim.cfg.Lease.WarmRate
	falseWarm, calls := 0, 0
	rng := rand.New(rand.NewPCG(3, 5))
	for round := range 5 {
		ls := newLeases(lim.cfg.Lease, lim.cfg.Timeout, lim.cfg.Logger, &lim.topo) // a fresh table and hash seed
		for w := range int64(2) {
			for ls.now()/int64(hotWindow) < w {
				time.Sleep(time.Millisecond)
			}
			for range perWindow {
				calls++
				if ls.demandOf(ls.hash(keys[rng.IntN(len(keys))])) >= warm {
					falseWarm++
				}
			}
		}
		// As many requests as a key at WarmRate makes in the two windows
		// demand counts.
		n := int(math.Ceil(warm * 2 * hotWindow.Seconds()))
		var got float64
		for range n {
			got = ls.demandOf(ls.hash(fmt.Sprintf("warm:%d", round)))
		}
		ls.close()
		if got < warm {
			t.Fatalf("round %d: a key asked for %d times has demand %.0f/s, want at least WarmRate %.0f/s", round, n, got, warm)
		}
	}
	t.Logf("%d of %d cold requests looked warm (%.3f%%)", falseWarm, calls, 100*float64(falseWarm)/float64(calls))
	if max := calls / 200; falseWarm > max {
		t.Errorf("%d of %d cold requests looked warm, want at most %d (0.5%%)", falseWarm, calls, max)
	}
}
