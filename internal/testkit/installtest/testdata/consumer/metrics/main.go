// Command metrics registers promlimit's collector for a Limiter over the
// Redis at its argument and gathers it once.
package main

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hybridlimit/hybridlimit/hybrid"
	"github.com/hybridlimit/hybridlimit/promlimit"
)

func main() {
	lim, err := hybrid.New(hybrid.Config{Addrs: []string{os.Args[1]}})
	if err != nil {
		log.Fatal(err)
	}
	defer lim.Close()
	if _, err := lim.Allow(context.Background(), "user:1", hybrid.PerMinute(10)); err != nil {
		log.Fatal(err)
	}
	c, err := promlimit.New(lim, promlimit.Config{})
	if err != nil {
		log.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil || len(mfs) == 0 {
		log.Fatalf("Gather = %d families, %v", len(mfs), err)
	}
	fmt.Println("metrics:", len(mfs), "families")
}
