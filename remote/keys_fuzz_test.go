package remote

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hybridlimit/hybridlimit/limit"
)

// hashTag is what Redis Cluster hashes of a key: the bytes between the
// first '{' and the first '}' after it, when there are any, else the key.
func hashTag(key string) string {
	i := strings.IndexByte(key, '{')
	if i < 0 {
		return key
	}
	j := strings.IndexByte(key[i+1:], '}')
	if j <= 0 {
		return key
	}
	return key[i+1 : i+1+j]
}

// untag inverts tagOf.
func untag(s string) string {
	r := strings.NewReplacer("%7B", "{", "%7D", "}", "%25", "%")
	return r.Replace(s)
}

// FuzzHashTag: every Redis key of one user key, whatever bytes it holds
// ('{', '}', "{}", '%', binary), hashes by the same tag, which is the whole
// encoded user key (so one slot), and the encoding is injective (it
// decodes back to the key).
func FuzzHashTag(f *testing.F) {
	for _, k := range []string{"user:42", "}x", "{", "}", "{}", "{a}b", "%7D", "%", "a{b}c}", "\x00\xff{", "}{}{"} {
		f.Add(k)
	}
	s, err := New(NewClient(&redis.Options{Addr: "127.0.0.1:1"}), Config{})
	if err != nil {
		f.Fatal(err)
	}
	limits := []limit.Limit{
		limit.PerMinute(10),
		{Algorithm: limit.SlidingWindowLog, Rate: 5, Period: time.Second},
		{Rate: 100, Period: time.Hour, Name: "x}{"},
	}
	f.Fuzz(func(t *testing.T, key string) {
		if key == "" {
			return
		}
		enc := tagOf(key)
		if strings.ContainsAny(enc, "{}") {
			t.Fatalf("tag %q of %q holds a brace", enc, key)
		}
		if got := untag(enc); got != key {
			t.Fatalf("tag %q of %q decodes to %q", enc, key, got)
		}
		for _, l := range limits {
			if tag := hashTag(s.Key(key, l)); tag != enc {
				t.Fatalf("key %q of %q, %v hashes by %q, want %q", s.Key(key, l), key, l, tag, enc)
			}
		}
	})
}

func TestPrefixWithBraceRefused(t *testing.T) {
	if _, err := New(NewClient(&redis.Options{Addr: "127.0.0.1:1"}), Config{Prefix: "rl{x}:"}); err == nil {
		t.Fatal("New with a prefix holding braces = nil error")
	}
}
