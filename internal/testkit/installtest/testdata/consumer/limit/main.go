// Command limit takes one decision with hybrid against the Redis at its
// argument, as a user's first program would.
package main

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/hybridlimit/hybridlimit/hybrid"
)

func main() {
	lim, err := hybrid.New(hybrid.Config{Addrs: []string{os.Args[1]}})
	if err != nil {
		log.Fatal(err)
	}
	defer lim.Close()
	r, err := lim.Allow(context.Background(), "user:1", hybrid.PerMinute(10))
	if err != nil || !r.Allowed || r.Source != hybrid.SourceRemote {
		log.Fatalf("Allow = %+v, %v; want allowed by Redis", r, err)
	}
	fmt.Println("limit: allowed by", r.Source, "remaining", r.Remaining)
}
