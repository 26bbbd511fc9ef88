package remote

import (
	"strconv"
	"strings"
	"time"

	"github.com/hybridlimit/hybridlimit/internal/algo"
	"github.com/hybridlimit/hybridlimit/limit"
)

// MaxKeyLen is the longest user key accepted, in bytes.
const MaxKeyLen = 512

// DefaultPrefix starts every Redis key when Config.Prefix is empty.
const DefaultPrefix = "rl:"

// appendSuffix appends what follows the user key in a Redis key:
// }:<algorithm>:<rate>:<period>[:<burst>], or }:@<algorithm>:<name> for a
// named limit, whose state carries the limit it was written for.
func appendSuffix(b []byte, l limit.Limit) []byte {
	return appendLimit(append(b, '}'), l)
}

// appendLimit appends the limit part of a Redis key, appendSuffix's
// after its brace: ":<algorithm>:<rate>:<period>[:<burst>]", or
// ":@<algorithm>:<name>".
func appendLimit(b []byte, l limit.Limit) []byte {
	if l.Name != "" {
		b = append(b, ":@"...)
		b = append(b, algo.ID(l.Algorithm).Code()...)
		b = append(b, ':')
		return append(b, l.Name...)
	}
	b = append(b, ':')
	b = append(b, algo.ID(l.Algorithm).Code()...)
	b = append(b, ':')
	b = strconv.AppendInt(b, l.Rate, 10)
	b = append(b, ':')
	b = appendPeriod(b, l.Period)
	if c := l.Capacity(); c != l.Rate {
		b = append(b, ':')
		b = strconv.AppendInt(b, c, 10)
	}
	return b
}

// appendPeriod writes a period in its largest whole unit: 1h, 90s, 250ms, 5us.
func appendPeriod(b []byte, d time.Duration) []byte {
	units := []struct {
		d    time.Duration
		name string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}, {time.Microsecond, "us"}}
	for _, u := range units {
		if d%u.d == 0 {
			b = strconv.AppendInt(b, int64(d/u.d), 10)
			return append(b, u.name...)
		}
	}
	return strconv.AppendInt(b, d.Microseconds(), 10) // unreachable for valid limits
}

// Key returns the Redis key that holds the state of limit l for key; in
// the compact layout, for a limit whose state is a field (named by key),
// the name its hashes start with, less the generation's digit.
func (s *Store) Key(key string, l limit.Limit) string { return s.keyFor(s.tagFor(key), key, l) }

// tagged is the Redis key of limit l under hash tag tag.
func (s *Store) tagged(tag string, l limit.Limit) string {
	// The suffix is built on the stack and the key in one concatenation:
	// one allocation per key.
	var buf [96]byte
	return s.prefix + "{" + tag + string(appendSuffix(buf[:0], l))
}

// tagOf is key as it goes inside the hash tag's braces: '%', '{' and '}'
// percent-encoded (%25, %7B, %7D), everything else as it is. The encoding is
// injective, and the tag holds no brace, so that Redis Cluster hashes every
// key of one user key by the whole encoded key, whatever bytes the user key
// holds (a '}' in it would otherwise end the tag early: "}x" with two
// limits was CROSSSLOT). Keys without those three bytes, nearly all, are
// kept as they are, without a copy.
func tagOf(key string) string {
	if !strings.ContainsAny(key, "%{}") {
		return key
	}
	var b strings.Builder
	b.Grow(len(key) + 8)
	for i := 0; i < len(key); i++ {
		switch c := key[i]; c {
		case '%':
			b.WriteString("%25")
		case '{':
			b.WriteString("%7B")
		case '}':
			b.WriteString("%7D")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
