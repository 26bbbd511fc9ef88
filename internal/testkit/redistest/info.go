package redistest

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// InfoInt reads one integer field of an INFO section of the server rdb
// talks to ("stats", "total_connections_received"), failing tb when the
// field is missing.
func InfoInt(tb testing.TB, rdb *redis.Client, section, field string) int64 {
	tb.Helper()
	info, err := rdb.Info(context.Background(), section).Result()
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	tb.Fatalf("INFO %s has no %s", section, field)
	return 0
}

// ScriptCalls counts the scripts and functions the server rdb talks to has
// run (the calls of EVALSHA and FCALL in INFO commandstats).
func ScriptCalls(tb testing.TB, rdb *redis.Client) int64 {
	tb.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		tb.Fatal(err)
	}
	var total int64
	for _, line := range strings.Split(info, "\r\n") {
		for _, p := range []string{"cmdstat_evalsha:calls=", "cmdstat_fcall:calls="} {
			if rest, ok := strings.CutPrefix(line, p); ok {
				n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest+",", ',')], 10, 64)
				total += n
			}
		}
	}
	return total
}
