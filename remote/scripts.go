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

// The Lua code reaches Redis in one of two forms:
//
//   - a function library (FUNCTION LOAD, FCALL) where the server has
//     functions (Redis 7 and later): the prelude, its integer writer
//     (digits.lua), every algorithm, the shared helpers and the entry
//     points, built once when the library is loaded; a call runs only its
//     entry point;
//   - scripts (EVALSHA) otherwise (Redis 6, miniredis): each script is the
//     prelude, the algorithms its requests use, the shared helpers and one
//     entry point. Redis runs a script's whole chunk on every call, so a
//     script that carries only the algorithms it needs defines fewer
//     functions per call: a mask of algorithms selects the variant.
const (
	prelude = "prelude.lua"
	digits  = "digits.lua" // the library's only
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

// entry is one of the entry points.
type entry int

const (
	entryDecide entry = iota
	entryLease
	entryGiveBack
	entryPeek
	entryReset // the compact layout's only
	numEntries
)

// entryFiles are the entry points' files, and entryNames their names in a
// function library.
var (
	entryFiles = [numEntries]string{"decide.lua", "lease.lua", "giveback.lua", "peek.lua", "reset.lua"}
	entryNames = [numEntries]string{"decide", "lease", "giveback", "peek", "reset"}
)

// in reports whether the code of a layout has entry e.
func (e entry) in(compact bool) bool { return compact || e != entryReset }

// script is one entry point with the library before it, run by EVALSHA.
type script struct {
	src string
	sha string
}

// library is every entry point in one function library, run by FCALL.
// Its name and its functions' names carry a hash of its code, so that
// instances running different versions during a rolling deploy each find
// their own on a node (function names are global to a server).
type library struct {
	name string
	src  string
	fn   [numEntries]string // the functions' names, by entry
}

// source reads the embedded files, in order, each once; the compact
// layout's code is rewritten as it is read (compactFile).
type source struct {
	b       strings.Builder
	seen    map[string]bool
	compact bool
}

func (s *source) write(names ...string) {
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	for _, name := range names {
		if s.seen[name] {
			continue
		}
		s.seen[name] = true
		s.b.WriteString(s.file(name))
		s.b.WriteByte('\n')
	}
}

// file returns the embedded file name, as the layout's code has it.
func (s *source) file(name string) string {
	src, err := scriptFS.ReadFile("scripts/" + name)
	if err != nil {
		panic("remote: missing embedded script " + name) // a build defect, not user input
	}
	if s.compact {
		return compactFile(name, string(src))
	}
	return string(src)
}

// writeAlgorithms writes the files of the algorithms in mask.
func (s *source) writeAlgorithms(mask int) {
	for a, files := range algorithmFiles {
		if mask&(1<<a) != 0 {
			s.write(files...)
		}
	}
}

// newScript builds the script of the given algorithms and files, in order
// after them.
func newScript(compact bool, mask int, edit func(string) string, files ...string) *script {
	s := source{compact: compact}
	s.write(prelude)
	s.b.WriteString("bind_globals()\n")
	s.writeAlgorithms(mask)
	s.write(files...)
	src := s.b.String()
	if edit != nil {
		src = edit(src)
	}
	sum := sha1.Sum([]byte(src))
	return &script{src: src, sha: hex.EncodeToString(sum[:])}
}

// newLibrary builds the function library: the code of every script, each
// entry point's body a local function, and one registered function per
// entry point, which sets KEYS and ARGV (a function gets them as
// arguments; the shared code reads them as a script does), binds the
// globals and builds istr's tables on its first call, and forgets the
// previous call's tags. Integers go to redis.call as istr writes them.
func newLibrary(compact bool, edit func(string) string) library {
	s := source{compact: compact}
	s.b.WriteString("local KEYS, ARGV\n")
	s.write(prelude, digits)
	s.writeAlgorithms(numMasks - 1)
	s.write(common)
	for e := range numEntries {
		if !e.in(compact) {
			continue
		}
		s.b.WriteString("local function entry_" + entryNames[e] + "()\n")
		s.b.WriteString(s.file(entryFiles[e]))
		s.b.WriteString("end\n")
	}
	s.b.WriteString(`local function fresh(keys, args)
  KEYS, ARGV = keys, args
  if not rcall then
    bind_globals()
    digit_tables()
  end
  if next(TAG) ~= nil then
    TAG = {}
  end
end
`)
	body := s.b.String()
	if edit != nil {
		body = edit(body)
	}
	sum := sha1.Sum([]byte(body))
	version := hex.EncodeToString(sum[:8])
	lib := library{name: "hybridlimit_" + version}
	var b strings.Builder
	b.WriteString("#!lua name=" + lib.name + "\n")
	b.WriteString(body)
	for e := range numEntries {
		if !e.in(compact) {
			continue
		}
		lib.fn[e] = "hl_" + version + "_" + entryNames[e]
		b.WriteString("redis.register_function('" + lib.fn[e] + "', function(keys, args)\n  fresh(keys, args)\n  return entry_" + entryNames[e] + "()\nend)\n")
	}
	lib.src = b.String()
	return lib
}

// scriptSet is the library, and the scripts of the four entry points for
// every set of algorithms with the one-step decision of a single token
// bucket.
type scriptSet struct {
	lib  library
	eval [numEntries][numMasks]*script
	// take decides one request against one TokenBucket limit, as decide
	// does, without common.lua, which Redis would build on every call
	// (see take.lua).
	take *script
}

// newScriptSet builds the code of the default layout, or of the compact
// one, edited by edit where it is not nil (the tests' clock).
func newScriptSet(compact bool, edit func(string) string) *scriptSet {
	s := &scriptSet{lib: newLibrary(compact, edit)}
	for m := 1; m < numMasks; m++ {
		for e := range numEntries {
			if e.in(compact) {
				s.eval[e][m] = newScript(compact, m, edit, common, entryFiles[e])
			}
		}
	}
	s.take = newScript(compact, 1<<limit.TokenBucket, edit, "take.lua")
	return s
}

// script returns the script of entry e for requests against limits: a
// call of one request to decide against one token bucket is take.lua.
func (s *scriptSet) script(e entry, limits []limit.Limit, one bool) *script {
	if e == entryDecide && one && oneStep(limits) {
		return s.take
	}
	return s.eval[e][mask(limits)]
}

// oneStep reports whether a decision against limits is decided in one
// step by the scripts (TB.take), and answered in the short form.
func oneStep(limits []limit.Limit) bool {
	return len(limits) == 1 && limits[0].Algorithm == limit.TokenBucket && limits[0].Name == ""
}

// defaultScripts and compactScripts are the code of each layout.
var (
	defaultScripts = newScriptSet(false, nil)
	compactScripts = newScriptSet(true, nil)
)

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

// isNoFunction reports that the node does not have the function called
// (a restart without persistence, a FUNCTION FLUSH), or no longer has
// FCALL at all (a failover to an older server): it did not run.
func isNoFunction(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.HasPrefix(msg, "ERR Function not found") || strings.Contains(strings.ToLower(msg), "unknown command") && strings.Contains(strings.ToLower(msg), "fcall")
}

// lacksFunctions reports that loading a library failed because the node
// cannot or may not run functions: a server without them (Redis 6,
// miniredis) or an ACL user who may not load them. The scripts then run by
// EVALSHA.
func lacksFunctions(err error) bool {
	if err == nil {
		return false
	}
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "unknown command") || strings.HasPrefix(msg, "noperm") || strings.Contains(msg, "no permissions")
}

// isLoaded reports the answer of a FUNCTION LOAD of a library the node
// has already.
func isLoaded(err error) bool {
	return err != nil && strings.Contains(err.Error(), "already exists")
}

// load makes sure the node's cache holds the scripts of single algorithms:
// one SCRIPT EXISTS, and SCRIPT LOAD only for those missing (a fresh node).
// The others are loaded the first time a call meets NOSCRIPT.
func (s *scriptSet) load(ctx context.Context, c redis.Scripter) error {
	want := []*script{s.take}
	for a := range algorithmFiles {
		for _, e := range []entry{entryDecide, entryLease, entryGiveBack} {
			want = append(want, s.eval[e][1<<a])
		}
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
