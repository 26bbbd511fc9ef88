package remote

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
)

// digitsProbe runs digits.lua's istr and the prelude's str on each integer
// of ARGV (as digits) and returns istr's answer and str's, in turn.
func digitsProbe() string {
	var s source
	s.write(prelude, digits)
	s.b.WriteString(`bind_globals()
digit_tables()
local out = {}
for i = 1, #ARGV do
  local x = tonumber(ARGV[i])
  out[2 * i - 1] = istr(x)
  out[2 * i] = str(x)
end
return out
`)
	return s.b.String()
}

// digitsCases are the integers istr must write: every power of ten and
// its neighbours (the edges of its groups of three digits), the largest
// integers a double holds exactly, negatives, and random ones of every
// length.
func digitsCases() []int64 {
	cs := []int64{0, 1, 9, 10, 99, 100, 999, 1000, 9999, 10000, 10001, 99999999, 100000000,
		1 << 52, 1<<52 - 1, 1<<53 - 1, 1<<53 - 2, -1, -10000, -(1<<53 - 1), 9007199254740991}
	for p := int64(1); p < 1e16; p *= 10 {
		cs = append(cs, p-1, p, p+1)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for digits := 1; digits <= 16; digits++ {
		hi := int64(1)
		for range digits {
			hi *= 10
		}
		hi = min(hi, 1<<53)
		for range 40 {
			cs = append(cs, r.Int64N(hi))
		}
	}
	exact := cs[:0]
	for _, c := range cs {
		if c < 1<<53 && c > -(1<<53) {
			exact = append(exact, c)
		}
	}
	return exact
}

// TestIstrWritesIntegersAsStrDoes: the library's integer writer gives the
// digits strconv gives and the script's string.format gives, on real
// redis-server and on miniredis (gopher-lua), for every integer below
// 2^53 in magnitude that it is given.
func TestIstrWritesIntegersAsStrDoes(t *testing.T) {
	cases := digitsCases()
	args := make([]any, len(cases))
	for i, c := range cases {
		args[i] = strconv.FormatInt(c, 10)
	}
	m := miniredis.RunT(t)
	mini := redis.NewClient(&redis.Options{Addr: m.Addr(), Protocol: 2})
	t.Cleanup(func() { mini.Close() })
	srv := redistest.Start(t)
	real := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { real.Close() })
	for name, rdb := range map[string]*redis.Client{"redis-server": real, "miniredis": mini} {
		t.Run(name, func(t *testing.T) {
			got, err := rdb.Eval(context.Background(), digitsProbe(), nil, args...).StringSlice()
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 2*len(cases) {
				t.Fatalf("%d answers for %d integers", len(got), len(cases))
			}
			for i, c := range cases {
				want := strconv.FormatInt(c, 10)
				if got[2*i] != want || got[2*i+1] != want {
					t.Errorf("%d: istr %q, str %q; want %q", c, got[2*i], got[2*i+1], want)
				}
			}
		})
	}
}
