// Command http serves one request through httplimit's middleware, with a
// rules file, against the Redis at its argument.
package main

import (
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/hybridlimit/hybridlimit/httplimit"
	"github.com/hybridlimit/hybridlimit/hybrid"
)

func main() {
	lim, err := hybrid.New(hybrid.Config{Addrs: []string{os.Args[1]}})
	if err != nil {
		log.Fatal(err)
	}
	defer lim.Close()
	rules, err := httplimit.ParseRules([]byte("default:\n  limits: [{rate: 1, period: 1m}]\n"))
	if err != nil {
		log.Fatal(err)
	}
	mw, err := httplimit.New(lim, httplimit.Config{Rules: rules})
	if err != nil {
		log.Fatal(err)
	}
	h := mw.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	var codes []int
	for range 2 {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
		codes = append(codes, w.Code)
	}
	if codes[0] != 200 || codes[1] != 429 {
		log.Fatalf("codes %v, want 200 then 429", codes)
	}
	fmt.Println("http: 200 then 429")
}
