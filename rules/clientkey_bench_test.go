package rules

import (
	"testing"
)

// BenchmarkClientIP measures the walk of a forwarding header, by number of
// trusted hops to skip.
func BenchmarkClientIP(b *testing.B) {
	p := newResolver(mustTrusted(b, "10.0.0.0/8"), false)
	for _, tt := range []struct{ name, xff string }{
		{"hops=0", "203.0.113.7"},
		{"hops=3", "198.51.100.1, 203.0.113.7, 10.0.0.5, 10.0.0.4, 10.0.0.3"},
	} {
		b.Run(tt.name, func(b *testing.B) {
			lines := []string{tt.xff}
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := p.clientIP("10.0.0.1:443", lines); !ok {
					b.Fatal("no address")
				}
			}
		})
	}
}
