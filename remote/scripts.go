package remote

import (
	"context"
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"strings"

	"github.com/redis/go-redis/v9"
)

//go:embed scripts/*.lua
var scriptFS embed.FS

// library is the code every entry point shares, in load order.
var library = []string{
	"prelude.lua",
	"token_bucket.lua",
	"leaky_bucket.lua",
	"fixed_window.lua",
	"sliding_window_log.lua",
	"sliding_window_counter.lua",
	"common.lua",
}

// script is one entry point with the library before it.
type script struct {
	name string
	src  string
	sha  string
}

func newScript(entry string, edit func(string) string) *script {
	var b strings.Builder
	for _, name := range append(library, entry) {
		src, err := scriptFS.ReadFile("scripts/" + name)
		if err != nil {
			panic("remote: missing embedded script " + name) // a build defect, not user input
		}
		b.Write(src)
		b.WriteByte('\n')
	}
	src := b.String()
	if edit != nil {
		src = edit(src)
	}
	sum := sha1.Sum([]byte(src))
	return &script{name: entry, src: src, sha: hex.EncodeToString(sum[:])}
}

// scriptSet is the three entry points.
type scriptSet struct {
	decide, lease, giveBack *script
}

func newScriptSet(edit func(string) string) *scriptSet {
	return &scriptSet{
		decide:   newScript("decide.lua", edit),
		lease:    newScript("lease.lua", edit),
		giveBack: newScript("giveback.lua", edit),
	}
}

func (s *scriptSet) all() []*script { return []*script{s.decide, s.lease, s.giveBack} }

var defaultScripts = newScriptSet(nil)

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

// load loads the scripts into the node's cache.
func (s *scriptSet) load(ctx context.Context, c redis.Scripter) error {
	for _, sc := range s.all() {
		if err := c.ScriptLoad(ctx, sc.src).Err(); err != nil {
			return err
		}
	}
	return nil
}
