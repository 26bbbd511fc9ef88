package remote

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
	"github.com/hybridlimit/hybridlimit/limit"
)

// TestLoadChoosesFunctions: Load loads the function library on
// redis-server 7 (the store then runs FCALL), and falls back to scripts on
// miniredis, which has no FUNCTION, and for an ACL user who may not load
// functions; decisions work either way.
func TestLoadChoosesFunctions(t *testing.T) {
	ctx := context.Background()
	l := limit.PerSecond(10)
	t.Run("redis-server", func(t *testing.T) {
		s, _, rdb := newRealProduction(t)
		if err := s.Load(ctx); err != nil || !s.Functions() {
			t.Fatalf("Load() = %v, Functions() = %v; want the library", err, s.Functions())
		}
		libs, err := rdb.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: s.scripts.lib.name}).Result()
		if err != nil || len(libs) != 1 || len(libs[0].Functions) != int(numEntries)-1 {
			t.Fatalf("FUNCTION LIST = %+v, %v; want library %s with %d functions (all but reset, the compact layout's)", libs, err, s.scripts.lib.name, numEntries-1)
		}
		before := redistest.ScriptCalls(t, rdb)
		if d, _, err := s.decide(ctx, "k", 1, l); err != nil || !d.Allowed {
			t.Fatalf("decide = %+v, %v", d, err)
		}
		if n := redistest.CommandCalls(t, rdb, "fcall"); n != redistest.ScriptCalls(t, rdb)-before || n == 0 {
			t.Errorf("%d FCALLs of %d calls; want every call a FCALL", n, redistest.ScriptCalls(t, rdb)-before)
		}
		// Loading again (another instance starting) is fine.
		if err := s.Load(ctx); err != nil {
			t.Errorf("second Load() = %v", err)
		}
	})
	t.Run("miniredis", func(t *testing.T) {
		s, _, _ := newMini(t)
		if err := s.Load(ctx); err != nil || s.Functions() {
			t.Fatalf("Load() = %v, Functions() = %v; want scripts", err, s.Functions())
		}
		if d, _, err := s.decide(ctx, "k", 1, l); err != nil || !d.Allowed {
			t.Fatalf("decide = %+v, %v", d, err)
		}
	})
	t.Run("ACL without function|load", func(t *testing.T) {
		_, srv, admin := newRealProduction(t)
		acl := []any{"ACL", "SETUSER", "limiter", "on", ">pw", "~rl:*", "+@all", "-function"}
		if err := admin.Do(ctx, acl...).Err(); err != nil {
			t.Fatal(err)
		}
		c := NewClient(&redis.Options{Addr: srv.Addr(), Username: "limiter", Password: "pw"})
		t.Cleanup(func() { c.Close() })
		s, err := New(c, Config{})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Load(ctx); err != nil || s.Functions() {
			t.Fatalf("Load() = %v, Functions() = %v; want scripts", err, s.Functions())
		}
		if d, _, err := s.decide(ctx, "k", 1, l); err != nil || !d.Allowed {
			t.Fatalf("decide = %+v, %v", d, err)
		}
	})
}

// TestFunctionFlushReloads: a node that lost the library (FUNCTION FLUSH,
// or a restart without persistence) gets it again at the next call, which
// is then run once, in a single call, a multi-key call and a pipeline.
func TestFunctionFlushReloads(t *testing.T) {
	ctx := context.Background()
	s, _, rdb := newRealProduction(t)
	if err := s.Load(ctx); err != nil || !s.Functions() {
		t.Fatalf("Load() = %v, Functions() = %v", err, s.Functions())
	}
	l := limit.PerMinute(100)
	calls := map[string]func() error{
		"Decide": func() error {
			_, _, err := s.decide(ctx, "a", 1, l)
			return err
		},
		"DecideMany": func() error {
			out := make([]Result, 2)
			return s.DecideMany(ctx, []Request{req("a", 1, []limit.Limit{l}), req("b", 1, []limit.Limit{l})}, out)
		},
		"DecidePipeline": func() error {
			out := make([]Result, 2)
			if err := s.DecidePipeline(ctx, []Request{req("a", 1, []limit.Limit{l}), req("b", 1, []limit.Limit{l})}, out); err != nil {
				return err
			}
			for _, r := range out {
				if r.Err != nil {
					return r.Err
				}
			}
			return nil
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			used0 := used(t, s, "a", l)
			if err := rdb.FunctionFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			if err := call(); err != nil {
				t.Fatalf("%s after FUNCTION FLUSH: %v", name, err)
			}
			if !s.Functions() {
				t.Errorf("the store left functions after a FUNCTION FLUSH")
			}
			if got := used(t, s, "a", l); got != used0+1 {
				t.Errorf("%s after FUNCTION FLUSH charged %d units, want 1 (run once)", name, got-used0)
			}
		})
	}
}

// used is how many units of l key has used, as a Peek says.
func used(t *testing.T, s *Store, key string, l limit.Limit) int64 {
	t.Helper()
	r, err := s.peek(context.Background(), key, l)
	if err != nil {
		t.Fatal(err)
	}
	return l.Capacity() - r.Remaining
}
