package shard

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
)

var sweep = flag.Bool("shard.sweep", false, "run TestConfigSweep, which measures key movement and balance for several Configs")

// TestConfigSweep produces the figures behind the defaults: for each Config,
// over 200 random sets of four node names and 100,000 keys, the share of
// keys that moves when the fourth node joins the first three, the number of
// keys of other nodes that move when the second node leaves the four, and
// max/min keys per node with three nodes. It runs only when asked:
//
//	go test -run TestConfigSweep -v -timeout 30m ./shard/ -args -shard.sweep
func TestConfigSweep(t *testing.T) {
	if !*sweep {
		t.Skip("run with -shard.sweep")
	}
	const sets = 200
	rng := rand.New(rand.NewPCG(1, 2))
	nameSets := make([][]string, sets)
	for i := range nameSets {
		for j := range 4 {
			nameSets[i] = append(nameSets[i], fmt.Sprintf("10.0.%d.%d:6379", rng.IntN(256), j+4*rng.IntN(60)))
		}
	}
	hashes := make([]uint64, numKeys)
	for i, k := range testKeys(numKeys) {
		hashes[i] = xxhash.Sum64String(k)
	}
	// owners returns the owner of every key, or nil if the ring fails.
	owners := func(cfg Config, names []string) []string {
		sorted, err := sortedNames(names)
		if err != nil {
			t.Fatal(err)
		}
		s, err := build(cfg, sorted)
		if err != nil {
			return nil
		}
		out := make([]string, len(hashes))
		for i, h := range hashes {
			out[i] = s.names[s.owner[h%uint64(len(s.owner))]]
		}
		return out
	}
	for _, p := range []int{271, 7919} {
		for _, r := range []int{20, 50, 100, 200, 300} {
			for _, load := range []float64{1.1, 1.25, 1.5} {
				cfg := Config{PartitionCount: p, ReplicationFactor: r, Load: load}
				addMin, addMax, addSum := 1.0, 0.0, 0.0
				remMax, remSum := 0, 0
				balMax, balSum := 0.0, 0.0
				var buildTime time.Duration
				for _, names := range nameSets {
					start := time.Now()
					three := owners(cfg, names[:3])
					buildTime += time.Since(start)
					four := owners(cfg, names)
					removed := owners(cfg, []string{names[0], names[2], names[3]})
					if three == nil || four == nil || removed == nil {
						t.Fatalf("%+v: cannot build a ring of %q", cfg, names)
					}
					add := float64(countDiff(three, four)) / numKeys
					addMin, addMax, addSum = min(addMin, add), max(addMax, add), addSum+add
					others := 0
					for i := range four {
						if four[i] != names[1] && four[i] != removed[i] {
							others++
						}
					}
					remMax, remSum = max(remMax, others), remSum+others
					count := map[string]int{}
					for _, n := range three {
						count[n]++
					}
					lo, hi := numKeys, 0
					for _, n := range names[:3] {
						lo, hi = min(lo, count[n]), max(hi, count[n])
					}
					bal := float64(hi) / float64(lo)
					balMax, balSum = max(balMax, bal), balSum+bal
				}
				t.Logf("P=%-5d R=%-3d Load=%-4v  add 3->4 moved %.3f/%.3f/%.3f (min/avg/max)  remove 1 of 4 moved others' keys %4.0f/%5d (avg/max)  max/min 3 nodes %.3f/%.3f (avg/max)  build %v",
					p, r, load, addMin, addSum/sets, addMax, float64(remSum)/sets, remMax, balSum/sets, balMax, (buildTime / sets).Round(10*time.Microsecond))
			}
		}
	}
}
