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
	return CommandCalls(tb, rdb, "evalsha", "fcall")
}

// CommandCalls sums the calls of the named commands (lower case: "get",
// "evalsha") the server rdb talks to has run (INFO commandstats).
func CommandCalls(tb testing.TB, rdb *redis.Client, names ...string) int64 {
	tb.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		tb.Fatal(err)
	}
	var total int64
	for _, line := range strings.Split(info, "\r\n") {
		for _, name := range names {
			if rest, ok := strings.CutPrefix(line, "cmdstat_"+name+":calls="); ok {
				n, _, _ := strings.Cut(rest, ",")
				v, _ := strconv.ParseInt(n, 10, 64)
				total += v
			}
		}
	}
	return total
}
