// Command grpc builds grpclimit's interceptors, with a rules file, over the
// Redis at its argument.
package main

import (
	"fmt"
	"log"
	"os"

	"google.golang.org/grpc"

	"github.com/hybridlimit/hybridlimit/grpclimit"
	"github.com/hybridlimit/hybridlimit/hybrid"
)

func main() {
	lim, err := hybrid.New(hybrid.Config{Addrs: []string{os.Args[1]}})
	if err != nil {
		log.Fatal(err)
	}
	defer lim.Close()
	rules, err := grpclimit.ParseRules([]byte("default:\n  limits: [{rate: 100, period: 1m}]\n"))
	if err != nil {
		log.Fatal(err)
	}
	ic, err := grpclimit.New(lim, grpclimit.Config{Rules: rules})
	if err != nil {
		log.Fatal(err)
	}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(ic.Unary()), grpc.ChainStreamInterceptor(ic.Stream()))
	srv.Stop()
	fmt.Println("grpc: interceptors built")
}
