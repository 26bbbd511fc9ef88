package local_test

// The benchmarks compare Limiter with the usual in-process keyed limiter built
// on golang.org/x/time/rate: one *rate.Limiter per key in a sync.Map, created
// on first use with LoadOrStore. Both enforce the same token bucket, 1e9 per
// second with a burst of 1e9, so that both admit every request and the
// figures measure the cost of a decision, not of a denial (denied/op reports
// it, and should be 0).
//
// Sub-benchmarks are named keys=N/impl=NAME:
//
//	keys=1        one hot key: the lock of one key (one shard) is contended
//	keys=10000    a working set that fits in cache
//	keys=1000000  a working set that does not
//
// Keys are generated before timing and every key is decided once before the
// timer starts, so the loops measure decisions for keys already present.
// Parallelism is varied with -cpu:
//
//	go test -run '^$' -bench . -benchmem -cpu 1,2 -count 3 ./local/

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/hybridlimit/hybridlimit/internal/limitspec"
	"github.com/hybridlimit/hybridlimit/limit"
	"github.com/hybridlimit/hybridlimit/local"
)

var keyCounts = []int{1, 10_000, 1_000_000}

// benchRate is the limit of every benchmark: high enough that nothing is
// denied.
const benchRate = 1_000_000_000

var (
	keysMu    sync.Mutex
	keysCache = map[int][]string{}
)

// benchKeys returns n distinct keys, built once.
func benchKeys(n int) []string {
	keysMu.Lock()
	defer keysMu.Unlock()
	if k, ok := keysCache[n]; ok {
		return k
	}
	k := make([]string, n)
	for i := range k {
		k[i] = "user:" + strconv.Itoa(i)
	}
	keysCache[n] = k
	return k
}

// impl is one keyed limiter under test: allow decides one unit for key.
type impl struct {
	name string
	new  func(keys []string) (allow func(key string) bool)
}

var impls = []impl{
	{"hybridlimit", newHybridlimit},
	{"xrate", newXrate},
}

func newHybridlimit(keys []string) func(string) bool {
	l, err := local.New(local.Config{MaxKeys: max(2*len(keys), local.DefaultMaxKeys)})
	if err != nil {
		panic(err)
	}
	lim := limit.PerSecond(benchRate)
	return func(key string) bool {
		d, _ := l.Allow(key, lim)
		return d.Allowed
	}
}

func newXrate(keys []string) func(string) bool {
	var m sync.Map
	return func(key string) bool {
		v, ok := m.Load(key)
		if !ok {
			v, _ = m.LoadOrStore(key, rate.NewLimiter(benchRate, benchRate))
		}
		return v.(*rate.Limiter).Allow()
	}
}

// warm returns impl's allow with every key decided once.
func warm(im impl, keys []string) func(string) bool {
	allow := im.new(keys)
	for _, k := range keys {
		allow(k)
	}
	return allow
}

// BenchmarkAllow decides one unit per operation from one goroutine, cycling
// through the keys.
func BenchmarkAllow(b *testing.B) {
	for _, n := range keyCounts {
		keys := benchKeys(n)
		for _, im := range impls {
			b.Run("keys="+strconv.Itoa(n)+"/impl="+im.name, func(b *testing.B) {
				allow := warm(im, keys)
				b.ReportAllocs()
				denied, i := 0, 0
				for b.Loop() {
					if !allow(keys[i]) {
						denied++
					}
					if i++; i == len(keys) {
						i = 0
					}
				}
				b.ReportMetric(float64(denied)/float64(b.N), "denied/op")
			})
		}
	}
}

// BenchmarkAllowParallel decides one unit per operation from GOMAXPROCS
// goroutines, each cycling through the keys from its own starting point.
// With keys=1 they all contend for one key.
func BenchmarkAllowParallel(b *testing.B) {
	for _, n := range keyCounts {
		keys := benchKeys(n)
		for _, im := range impls {
			var allow func(string) bool // warmed once, reused as b.N grows
			b.Run("keys="+strconv.Itoa(n)+"/impl="+im.name, func(b *testing.B) {
				if allow == nil {
					allow = warm(im, keys)
				}
				var start, denied atomic.Int64
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					i := int(start.Add(7919) % int64(len(keys)))
					var d int64
					for pb.Next() {
						if !allow(keys[i]) {
							d++
						}
						if i++; i == len(keys) {
							i = 0
						}
					}
					denied.Add(d)
				})
				b.ReportMetric(float64(denied.Load())/float64(b.N), "denied/op")
			})
		}
	}
}

// BenchmarkAllowTwoLimits decides one unit against two limits of one key
// (per second and per hour), all or nothing, which x/time/rate cannot do.
func BenchmarkAllowTwoLimits(b *testing.B) {
	for _, n := range keyCounts[:2] {
		keys := benchKeys(n)
		b.Run("keys="+strconv.Itoa(n)+"/impl=hybridlimit", func(b *testing.B) {
			l, err := local.New(local.Config{})
			if err != nil {
				b.Fatal(err)
			}
			perSecond, perHour := limit.PerSecond(benchRate), limit.PerHour(benchRate)
			for _, k := range keys {
				l.Allow(k, perSecond, perHour)
			}
			b.ReportAllocs()
			denied, i := 0, 0
			for b.Loop() {
				if d, _ := l.Allow(keys[i], perSecond, perHour); !d.Allowed {
					denied++
				}
				if i++; i == len(keys) {
					i = 0
				}
			}
			b.ReportMetric(float64(denied)/float64(b.N), "denied/op")
		})
	}
}

// BenchmarkAllowNewKeys decides one unit per operation for keys never seen
// (or long evicted): a Limiter of 100,000 entries cycling through 1,000,000
// keys inserts an entry and evicts another on every operation.
func BenchmarkAllowNewKeys(b *testing.B) {
	keys := benchKeys(1_000_000)
	b.Run("maxkeys=100000/impl=hybridlimit", func(b *testing.B) {
		l, err := local.New(local.Config{MaxKeys: 100_000})
		if err != nil {
			b.Fatal(err)
		}
		lim := limit.PerSecond(benchRate)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			l.Allow(keys[i], lim)
			if i++; i == len(keys) {
				i = 0
			}
		}
		if n := l.Len(); n > 100_000 {
			b.Fatalf("Len() = %d, want <= 100000", n)
		}
	})
}

// BenchmarkLimitSpec measures limitspec.Of (a limit's validation and its
// integer form), which the Limiter computes once per entry and caches
// rather than once per decision.
func BenchmarkLimitSpec(b *testing.B) {
	lims := []limit.Limit{limit.PerSecond(benchRate), limit.PerHour(100)}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := limitspec.Of(lims[i&1]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkNow measures the default clock, read once per decision by both
// implementations.
func BenchmarkNow(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = time.Now()
	}
}
