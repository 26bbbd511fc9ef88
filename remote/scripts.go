package remote

import (
	"context"
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/hybridlimit/hybridlimit/limit"
)

//go:embed scripts/*.lua
var scriptFS embed.FS

// Each script is the prelude, the algorithms its requests use, the shared
// helpers and one entry point. Redis runs a script's whole chunk on every
// call, so a script that carries only the algorithms it needs defines fewer
// functions per call: a mask of algorithms selects the variant.
const (
	prelude = "prelude.lua"
	common  = "common.lua"
)

// algorithmFiles lists, per algorithm, the files it needs in load order.
var algorithmFiles = [...][]string{
	limit.TokenBucket:          {"token_bucket.lua"},
	limit.LeakyBucket:          {"token_bucket.lua", "leaky_bucket.lua"},
	limit.FixedWindow:          {"fixed_window.lua"},
	limit.SlidingWindowLog:     {"sliding_window_log.lua"},
	limit.SlidingWindowCounter: {"sliding_window_counter.lua"},
}

// numMasks is the number of sets of algorithms.
const numMasks = 1 << len(algorithmFiles)

// script is one entry point with the library before it.
type script struct {
	src string
	sha string
}

// newScript builds the script of the given algorithms and files, in order
// after them.
func newScript(mask int, edit func(string) string, files ...string) *script {
	var b strings.Builder
	seen := map[string]bool{}
	write := func(name string) {
		if seen[name] {
			return
		}
		seen[name] = true
		src, err := scriptFS.ReadFile("scripts/" + name)
		if err != nil {
			panic("remote: missing embedded script " + name) // a build defect, not user input
		}
		b.Write(src)
		b.WriteByte('\n')
	}
	write(prelude)
	for a, files := range algorithmFiles {
		if mask&(1<<a) != 0 {
			for _, f := range files {
				write(f)
			}
		}
	}
	for _, f := range files {
		write(f)
	}
	src := b.String()
	if edit != nil {
		src = edit(src)
	}
	sum := sha1.Sum([]byte(src))
	return &script{src: src, sha: hex.EncodeToString(sum[:])}
}

// scriptSet is the four entry points, for every set of algorithms, and
// the one-step decision of a single token bucket.
type scriptSet struct {
	decide, lease, giveBack, peek [numMasks]*script
	// take decides one request against one TokenBucket limit, as decide
	// does, without common.lua, which Redis would build on every call
	// (see take.lua).
	take *script
}

func newScriptSet(edit func(string) string) *scriptSet {
	s := &scriptSet{}
	for m := 1; m < numMasks; m++ {
		s.decide[m] = newScript(m, edit, common, "decide.lua")
		s.lease[m] = newScript(m, edit, common, "lease.lua")
		s.giveBack[m] = newScript(m, edit, common, "giveback.lua")
		s.peek[m] = newScript(m, edit, common, "peek.lua")
	}
	s.take = newScript(1<<limit.TokenBucket, edit, "take.lua")
	return s
}

// decideOne returns the script that decides one request against limits.
func (s *scriptSet) decideOne(limits []limit.Limit) *script {
	if len(limits) == 1 && limits[0].Algorithm == limit.TokenBucket && limits[0].Name == "" {
		return s.take
	}
	return s.decide[mask(limits)]
}

var defaultScripts = newScriptSet(nil)

// mask returns the set of algorithms of limits.
func mask(limits []limit.Limit) int {
	m := 0
	for _, l := range limits {
		m |= 1 << l.Algorithm
	}
	return m
}

// isNoScript reports a NOSCRIPT error: the script did not run.
func isNoScript(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT")
}

// run sends the script by EVALSHA and, if the node does not have it, loads
// it and sends it once more.
func (sc *script) run(ctx context.Context, c redis.Scripter, keys []string, args []any) *redis.Cmd {
	cmd := c.EvalSha(ctx, sc.sha, keys, args...)
	if !isNoScript(cmd.Err()) {
		return cmd
	}
	if err := c.ScriptLoad(ctx, sc.src).Err(); err != nil {
		return cmd
	}
	return c.EvalSha(ctx, sc.sha, keys, args...)
}

// runInts is run for a script whose reply is an array of integers: the
// reply is read straight into an []int64 (redis.IntSliceCmd) rather than
// through []any, which would allocate a box for every value above 255.
func (sc *script) runInts(ctx context.Context, c Client, keys []string, args []any) *redis.IntSliceCmd {
	cmdArgs := make([]any, 0, 3+len(keys)+len(args))
	cmdArgs = append(cmdArgs, "evalsha", sc.sha, len(keys))
	for _, k := range keys {
		cmdArgs = append(cmdArgs, k)
	}
	cmdArgs = append(cmdArgs, args...)
	cmd := redis.NewIntSliceCmd(ctx, cmdArgs...)
	_ = c.Process(ctx, cmd) // the error is the command's
	if !isNoScript(cmd.Err()) {
		return cmd
	}
	if err := c.ScriptLoad(ctx, sc.src).Err(); err != nil {
		return cmd
	}
	cmd = redis.NewIntSliceCmd(ctx, cmdArgs...)
	_ = c.Process(ctx, cmd)
	return cmd
}

// load makes sure the node's cache holds the scripts of single algorithms:
// one SCRIPT EXISTS, and SCRIPT LOAD only for those missing (a fresh node).
// The others are loaded the first time a call meets NOSCRIPT.
func (s *scriptSet) load(ctx context.Context, c redis.Scripter) error {
	want := []*script{s.take}
	for a := range algorithmFiles {
		want = append(want, s.decide[1<<a], s.lease[1<<a], s.giveBack[1<<a])
	}
	shas := make([]string, len(want))
	for i, sc := range want {
		shas[i] = sc.sha
	}
	have, err := c.ScriptExists(ctx, shas...).Result()
	if err != nil {
		return err
	}
	for i, sc := range want {
		if i < len(have) && have[i] {
			continue
		}
		if err := c.ScriptLoad(ctx, sc.src).Err(); err != nil {
			return err
		}
	}
	return nil
}
