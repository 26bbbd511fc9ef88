package remote

import (
	"crypto/sha256"
	"fmt"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/hybridlimit/hybridlimit/internal/limitspec"
	"github.com/hybridlimit/hybridlimit/limit"
)

// Layout is how a Store keeps its states in Redis.
//
// The zero Layout gives each state a key of its own, with a TTL: the
// least Redis CPU per decision, and about 130 bytes of Redis memory per
// limit and client (257 B for a client of 100/min and 1000/hour).
//
// Compact keeps the states of TokenBucket, LeakyBucket, FixedWindow and
// SlidingWindowCounter limits as fields of hashes that the keys of one
// bucket share: one hash per bucket, limit and generation, a field per key
// named by the key (a key longer than 64 bytes by its digest;
// scripts/compact.lua has the walkthrough). It takes
// Redis's per-key bookkeeping (dict and expiry entries, the key's name,
// the value object), most of a state's memory, out of the cost of a key:
// a client of 100/min and 1000/hour costs about 60 bytes. What it costs
// instead: a state is kept until the end of the generation after the one
// it was written in (an hour or two, where its own key would expire when
// it no longer matters), a key new to a generation reads the other
// generation's hash too, and every access scans a hash of about
// KeysPerHash fields: about 5 % more Redis CPU for a key whose states are
// there, 37 % more for a key's first request in a generation.
// SlidingWindowLog limits keep a sorted set of their own (one member per
// unit: a field would not hold them), and so does a bucket so fast that
// its state could not be told from an older one two generations on
// (about a million units a minute with a one-microsecond quantum).
type Layout struct {
	// Compact selects the compact layout.
	Compact bool
	// Keys is how many distinct keys the compact layout is sized for:
	// the keys that decide within a generation (an hour, for limits
	// whose states live up to an hour). The hashes are sized so that
	// each holds about KeysPerHash of them: within Redis's
	// hash-max-listpack-entries (128 by default), the compact encoding.
	// Many more keys than Keys make hashes grow past it, into Redis's
	// hash table encoding, which costs about as much memory as keys of
	// their own; many fewer leave hashes nearly empty, each costing a
	// key's overhead. 0 means DefaultLayoutKeys; at most MaxLayoutKeys.
	// Only with Compact.
	Keys int
}

const (
	// DefaultLayoutKeys is the Keys of a compact Layout that gives none.
	DefaultLayoutKeys = 1_000_000
	// MaxLayoutKeys bounds Layout.Keys.
	MaxLayoutKeys = 1 << 40
	// KeysPerHash is how many keys a compact hash holds when the
	// Layout's Keys are deciding. A read or a write scans the hash, so
	// fewer cost less Redis CPU, and more cost less memory, up to Redis's
	// hash-max-listpack-entries (128 by default), past which a hash is a
	// hash table and costs more than keys of their own. Measured for a
	// client of 100/min and 1000/hour (TestRedisBytesPerClient at 500
	// thousand clients; BenchmarkScriptInstructions, a client new to its
	// generation and one revisited): 32 keys a hash, 60.9 B a client and
	// 85.3 K / 69.8 K instructions a request; 48, 59.2 B and 92.5 K /
	// 73.5 K; 64, 56.1 B and 99.7 K / 77.5 K; 112, 65.8 B (the fullest
	// hashes leave the listpack); 128, 126.0 B. The default layout: 257 B
	// and 62.1 K / 66.7 K. 32 keeps a revisit within 5 % of the default
	// layout's CPU, and leaves room for four times the keys Keys says
	// before a hash leaves the listpack.
	KeysPerHash = 32
)

// Validate reports a Layout New would refuse: Keys without Compact, or
// out of range.
func (l Layout) Validate() error {
	_, err := l.check()
	return err
}

// check validates l and returns the number of buckets it means (0 for the
// default layout).
func (l Layout) check() (uint64, error) {
	switch {
	case !l.Compact && l.Keys != 0:
		return 0, fmt.Errorf("remote: Layout.Keys %d without Compact: the default layout is not sized", l.Keys)
	case !l.Compact:
		return 0, nil
	case l.Keys < 0 || l.Keys > MaxLayoutKeys:
		return 0, fmt.Errorf("remote: Layout.Keys %d outside [0, %d]", l.Keys, int64(MaxLayoutKeys))
	}
	keys := l.Keys
	if keys == 0 {
		keys = DefaultLayoutKeys
	}
	return uint64((keys + KeysPerHash - 1) / KeysPerHash), nil
}

// layoutVersion starts the compact layout's hash tags: a later change of
// the layout gets another, so that instances of both can run side by
// side, each with its own states. The tag's raw '{', which no user key's
// tag holds (tagOf encodes it), keeps them apart from the default
// layout's keys too.
const layoutVersion = "{c1#"

// keyedFlag is added, in the compact layout, to the algorithm of a limit
// whose state keeps a key of its own (KEYED in compact.lua).
const keyedFlag = 16

// genMicros is the compact layout's unit of generation length, GEN in
// compact.lua.
const genMicros = 3600_000_000

// fielded reports whether, in the compact layout, limit l's state is a
// field of a hash: its algorithm keeps a string state, and a bucket's
// state, read up to two generations after it was written, still decodes
// as the full bucket it then is: the quanta of two generations times the
// rate stay below 2^51 (see token_bucket.lua's tb_deficit). A bucket's
// generation is the time it takes to fill from empty, rounded up to whole
// hours, as compact.lua's gen_len computes it.
func fielded(l limit.Limit) bool {
	switch l.Algorithm {
	case limit.SlidingWindowLog:
		return false
	case limit.TokenBucket, limit.LeakyBucket:
		sp := limitspec.Valid(l)
		life := ceilDiv(sp.C*sp.P, sp.R) * sp.Q
		gen := max(ceilDiv(life, genMicros), 1) * genMicros
		return (2*gen/sp.Q+2)*sp.R+sp.C*sp.P < 1<<51
	}
	return true
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// bucket is the compact layout's hash tag of key: the layout's version and
// the key's bucket, "{c1#172".
func (s *Store) bucket(key string) string {
	var buf [24]byte
	b := append(buf[:0], layoutVersion...)
	return string(strconv.AppendUint(b, xxhash.Sum64String(key)%s.buckets, 10))
}

// compactKey is what KEYS holds for limit l of key in the compact layout,
// under the key's bucket tag: the hashes' name without the generation's
// digit ("<prefix>{{c1#172}:tb:100:1m:"), or, for a limit that keeps a
// key of its own, that key, the key's length and the key after the tag
// ("<prefix>{{c1#172}5:user1:sl:10:1s"): every key of one request shares
// its bucket's hash slot.
func (s *Store) compactKey(tag, key string, l limit.Limit) string {
	var buf [96]byte
	b := append(buf[:0], s.prefix...)
	b = append(b, '{')
	b = append(b, tag...)
	b = append(b, '}')
	if fielded(l) {
		return string(append(appendLimit(b, l), ':'))
	}
	b = strconv.AppendInt(b, int64(len(key)), 10)
	b = append(b, ':')
	b = append(b, key...)
	return string(appendLimit(b, l))
}

// maxFieldLen is the longest key that names its field as it is: Redis's
// default hash-max-listpack-value, past which a field would turn its hash
// into a hash table, costing every key of the bucket.
const maxFieldLen = 64

// fieldOf is the field that holds key's states in the compact layout: the
// key itself, or, for a key longer than maxFieldLen or starting with a
// zero byte, a zero byte and the first 16 bytes of its SHA-256, so that a
// long key costs no more than a short one and no key can name another's
// digest (every key that starts with a zero byte is digested).
func fieldOf(key string) string {
	if len(key) <= maxFieldLen && key[0] != 0 {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	return "\x00" + string(sum[:16])
}

// compactLua is the compact layout's storage (scripts/compact.lua).
const compactLua = "compact.lua"

// compactRewrites are the edits that turn a file of the default layout's
// code into the compact layout's: the token bucket's direct GET and SET of
// its one-step paths, and stored_tag's GET, go through sget and sset, which
// compact.lua replaces (with kdel); read_spec takes a keyed limit's flag
// off its algorithm; each entry point reads its request's key, the field,
// from ARGV. Each edit must apply as many times as given, or the package's
// initialization panics (it builds both layouts' code), and
// TestCompactCodeReachesNoKey checks that no other GET, SET or DEL is left.
var compactRewrites = map[string][]struct {
	old, new string
	n        int
}{
	"prelude.lua": {
		{"-- The value of a string state of limit sp, without its tag.\n", compactMarker, 1},
		{"  local s = rcall('GET', key)\n", "  local s = sget(key, sp)\n", 1},
		{"  rcall('SET', key, val, 'PX', ms)\n", "  sset(key, v.sp, val, 'PX', ms)\n", 1},
		{"local function kdel(key, sp)\n  rcall('DEL', key)\nend\n", "", 1},
	},
	"token_bucket.lua": {
		{"rcall('GET', key)", "sget(key, sp)", 2},
		{"rcall('SET', key, ", "sset(key, sp, ", 3},
	},
	"common.lua": {
		{"local s = rcall('GET', key)", "local s = sget(key, sp)", 1},
		{"  if sp.alg >= NAMED then\n", "  if sp.alg >= KEYED then\n    sp.alg, sp.keyed = sp.alg - KEYED, true\n  end\n  if sp.alg >= NAMED then\n", 1},
	},
	"decide.lua": {
		{"  local hs = ARGV[i]\n  i = i + 1\n", "  local hs = ARGV[i]\n  FIELD = ARGV[i + 1]\n  i = i + 2\n", 1},
	},
	"lease.lua":    {{"local now = clock()\n", "local now = clock()\nFIELD = ARGV[#ARGV]\n", 1}},
	"giveback.lua": {{"local now = clock()\n", "local now = clock()\nFIELD = ARGV[#ARGV]\n", 1}},
	"peek.lua":     {{"local now = clock()\n", "local now = clock()\nFIELD = ARGV[#ARGV]\n", 1}},
	"take.lua":     {{"local now = clock()\n", "local now = clock()\nFIELD = ARGV[#ARGV]\n", 1}},
}

// compactMarker stands, after the prelude's rewrite, where compact.lua
// goes: before kget, which calls its sget.
const compactMarker = "--[[compact.lua]]\n"

// compactFile returns file name's source src as the compact layout has it.
func compactFile(name, src string) string {
	for _, r := range compactRewrites[name] {
		if n := strings.Count(src, r.old); n != r.n {
			panic(fmt.Sprintf("remote: compact layout: %s holds %q %d times, want %d", name, r.old, n, r.n)) // a build defect
		}
		src = strings.ReplaceAll(src, r.old, r.new)
	}
	if name == prelude {
		lua, err := scriptFS.ReadFile("scripts/" + compactLua)
		if err != nil {
			panic("remote: missing embedded script " + compactLua)
		}
		src = strings.Replace(src, compactMarker, string(lua)+"\n-- The value of a string state of limit sp, without its tag.\n", 1)
	}
	return src
}
