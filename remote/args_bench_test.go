package remote

import (
	"testing"

	"github.com/hybridlimit/hybridlimit/internal/limitspec"
	"github.com/hybridlimit/hybridlimit/limit"
)

// BenchmarkSpecArgs measures the one-entry cache of boxed script
// arguments (specArgs) against boxing them afresh for every request, for a
// limit whose integers are above 255 (each boxes into an allocation):
//
//	go test -run '^$' -bench SpecArgs -benchmem ./remote/
func BenchmarkSpecArgs(b *testing.B) {
	l := limit.PerMinute(1_000_000)
	b.Run("cached", func(b *testing.B) {
		s := &Store{}
		for b.Loop() {
			argsSink = s.specArgs(l)
		}
	})
	b.Run("fresh", func(b *testing.B) {
		for b.Loop() {
			sp := limitspec.Valid(l)
			argsSink = []any{int(sp.Algorithm), sp.Q, sp.P, sp.R, sp.C} // they go to the client, as in a call
		}
	})
}

// argsSink keeps the arguments live, as a call's argument list does.
var argsSink []any
