package remote

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Functions reports whether the store runs its Lua code as a function
// library (FCALL), which the node builds once, rather than as scripts
// (EVALSHA), which Redis builds on every call. Load decides: functions
// where the node has them and the client may load them.
func (s *Store) Functions() bool { return s.fn.Load() }

// loadLibrary loads the function library into the node (every master of a
// Cluster); a node that has it already is fine.
func (s *Store) loadLibrary(ctx context.Context) error {
	load := func(ctx context.Context, c redis.Cmdable) error {
		err := c.FunctionLoad(ctx, s.scripts.lib.src).Err()
		if isLoaded(err) {
			return nil
		}
		return err
	}
	if s.cl != nil {
		return s.eachMaster(ctx, func(m *member) error { return load(ctx, m.client) })
	}
	if c, ok := s.rdb.(redis.Cmdable); ok {
		return load(ctx, c)
	}
	cmd := redis.NewStringCmd(ctx, "function", "load", s.scripts.lib.src)
	_ = s.rdb.Process(ctx, cmd)
	if isLoaded(cmd.Err()) {
		return nil
	}
	return cmd.Err()
}

// Load loads the Lua code into the node: the function library where the
// node has functions, else the scripts of single algorithms (the others
// are loaded the first time a call meets NOSCRIPT). It decides which form
// the store uses (Functions).
func (s *Store) Load(ctx context.Context) error {
	err := s.loadLibrary(ctx)
	if err == nil {
		s.fn.Store(true)
		return nil
	}
	if !lacksFunctions(err) {
		return err
	}
	s.fn.Store(false)
	if s.cl != nil {
		return s.eachMaster(ctx, func(m *member) error { return s.scripts.load(ctx, m.client) })
	}
	return s.scripts.load(ctx, s.rdb)
}

// commandArgs is an FCALL or EVALSHA of name (a function, or a script's
// SHA-1) with keys and args.
func commandArgs(verb, name string, keys []string, args []any) []any {
	a := make([]any, 0, 3+len(keys)+len(args))
	a = append(a, verb, name, len(keys))
	for _, k := range keys {
		a = append(a, k)
	}
	return append(a, args...)
}

// call is one entry point's command for one round trip: the function of
// entry e, or the script sc where the store runs scripts.
type call struct {
	e    entry
	sc   *script
	keys []string
	args []any
}

// command returns c's command, made by mk from its arguments, as the store
// runs its code now.
func (s *Store) command(c *call, mk func([]any) redis.Cmder) redis.Cmder {
	if s.fn.Load() {
		return mk(commandArgs("fcall", s.scripts.lib.fn[c.e], c.keys, c.args))
	}
	return mk(commandArgs("evalsha", c.sc.sha, c.keys, c.args))
}

// reloadLibrary loads the library again after a call found it missing.
// Where the node turns out to have no functions (any more), the store
// switches to scripts. It reports whether a call may be sent again: the
// library is there, or the store now runs scripts.
func (s *Store) reloadLibrary(ctx context.Context) bool {
	err := s.loadLibrary(ctx)
	if lacksFunctions(err) {
		s.fn.Store(false)
		return true
	}
	return err == nil
}

// missing reports whether cmd did not run because the node lacks its code:
// the library (or FCALL itself) or the script.
func missing(cmd redis.Cmder) bool {
	err := cmd.Err()
	return isNoFunction(err) || isNoScript(err)
}

// reload makes the node able to run c again after cmd found its code
// missing: the library (see reloadLibrary), or c's script where the store
// runs scripts. It reports whether c should be sent again; nothing ran.
func (s *Store) reload(ctx context.Context, c *call, cmd redis.Cmder) bool {
	if isNoFunction(cmd.Err()) && !s.reloadLibrary(ctx) {
		return false
	}
	return s.fn.Load() || s.rdb.ScriptLoad(ctx, c.sc.src).Err() == nil
}

// run sends c, and once more if the node did not have its code. On a
// Redis Cluster it follows the cluster's routing answers (send).
func (s *Store) run(ctx context.Context, c *call, mk func([]any) redis.Cmder) redis.Cmder {
	if s.cl != nil {
		r := s.routedCall(c, mk)
		s.send(ctx, []*routed{r})
		r.cmd.SetErr(r.err())
		return r.cmd
	}
	cmd := s.command(c, mk)
	_ = s.rdb.Process(ctx, cmd) // the error is the command's
	if missing(cmd) && s.reload(ctx, c, cmd) {
		cmd = s.command(c, mk)
		_ = s.rdb.Process(ctx, cmd)
	}
	return cmd
}

// runInts is run for an entry point whose reply is an array of integers:
// the reply is read straight into an []int64 (redis.IntSliceCmd) rather
// than through []any, which would allocate a box for every value above
// 255.
func (s *Store) runInts(ctx context.Context, c *call) *redis.IntSliceCmd {
	return s.run(ctx, c, func(a []any) redis.Cmder { return redis.NewIntSliceCmd(ctx, a...) }).(*redis.IntSliceCmd)
}

// runCmd is run for an entry point with any reply.
func (s *Store) runCmd(ctx context.Context, c *call) *redis.Cmd {
	return s.run(ctx, c, func(a []any) redis.Cmder { return redis.NewCmd(ctx, a...) }).(*redis.Cmd)
}
