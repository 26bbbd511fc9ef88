package shard_test

import (
	"errors"
	"fmt"

	"github.com/hybridlimit/hybridlimit/shard"
)

func Example() {
	ring, err := shard.New(shard.Config{}, "redis-a:6379", "redis-b:6379", "redis-c:6379")
	if err != nil {
		fmt.Println(err)
		return
	}
	keys := []string{"user:1", "user:2", "user:3", "user:42"}
	for _, key := range keys {
		node, _ := ring.Locate(key)
		fmt.Println(key, "->", node)
	}

	// A fourth node takes about a quarter of the keys, and takes them only
	// from the others: no key moves between the nodes that stayed.
	before := map[string]string{}
	for i := range 10_000 {
		key := fmt.Sprint("user:", i)
		before[key], _ = ring.Locate(key)
	}
	if err := ring.Add("redis-d:6379"); err != nil {
		fmt.Println(err)
		return
	}
	moved, elsewhere := 0, 0
	for key, old := range before {
		if node, _ := ring.Locate(key); node != old {
			moved++
			if node != "redis-d:6379" {
				elsewhere++
			}
		}
	}
	fmt.Printf("after Add: %d of 10000 keys moved, %d of them not to redis-d\n", moved, elsewhere)

	// A failed change leaves the ring as it was.
	err = ring.Add("redis-b:6379")
	fmt.Println(errors.Is(err, shard.ErrInvalidName), err)
	fmt.Println(ring.Members())

	// Output:
	// user:1 -> redis-c:6379
	// user:2 -> redis-a:6379
	// user:3 -> redis-a:6379
	// user:42 -> redis-b:6379
	// after Add: 2652 of 10000 keys moved, 0 of them not to redis-d
	// true shard: invalid node name: "redis-b:6379" is already a member
	// [redis-a:6379 redis-b:6379 redis-c:6379 redis-d:6379]
}

func ExampleRing_Locate_empty() {
	ring, _ := shard.New(shard.Config{}, "only")
	_ = ring.Remove("only")
	node, ok := ring.Locate("user:42")
	fmt.Printf("%q %v\n", node, ok)
	// Output: "" false
}
