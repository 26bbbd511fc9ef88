-- hybridlimit: helpers shared by every script. All arithmetic stays below
-- 2^53 so that doubles are exact; package limit holds the reference.
local TWO26 = 67108864
local TWO51 = 2251799813685248
local TWO52 = 4503599627370496
local ALG = {}
-- A decide call's request head is cost × SETS + the index of its set of
-- limits (remote's maxSets).
local SETS = 1024
-- A give-back's head is GIVE + units × SETS + set (remote's giveHead):
-- above every other head, whose cost is at most 2^40.
local GIVE = TWO51

-- Globals bound to locals by bind_globals(): a local is a register, a
-- global a table lookup. Not at the top level: a Redis function library
-- cannot read math, string or redis.call while it loads, only when a
-- function runs. A script binds them as it starts (the line after this
-- file); a library's functions the first time one of them is called.
local floor, mmax, mmin, sformat, smatch, rcall, tonumber, unpack
local function bind_globals()
  floor, mmax, mmin = math.floor, math.max, math.min
  sformat, smatch = string.format, string.match
  rcall, tonumber, unpack = redis.call, _G.tonumber, _G.unpack
end

-- floor(a/b) for integers, exact. Lua's % is a - floor(a/b)*b, an opcode
-- (math.floor is a call, which costs Redis several times more): its
-- quotient may be off by one where a/b rounds, so the remainder is brought
-- into [0, b), and a - r is then an exact multiple of b.
local function fdiv(a, b)
  local r = a % b
  if r < 0 then
    r = r + b
  elseif r >= b then
    r = r - b
  end
  return (a - r) / b
end

local function cdiv(a, b)
  return -fdiv(-a, b)
end

local function mod52(x)
  return x % TWO52 -- exact: the divisor is a power of two
end

-- a*b mod 2^52 for 0 <= a < 2^53 and 0 <= b < 2^52, without leaving 2^53.
local function modmul(a, b)
  local al = a % TWO26
  local ah = (a - al) / TWO26
  local bl = b % TWO26
  local bh = (b - bl) / TWO26
  local mid = ((ah * bl) % TWO26 + (al * bh) % TWO26) % TWO26
  return (mid * TWO26 + al * bl) % TWO52
end

-- Integers go to Redis as digit strings, exact below 2^53: never
-- exponents, never fractions. A function library writes them with istr
-- (digits.lua).
local function str(x)
  return sformat('%.0f', x)
end

-- A TTL in milliseconds (below 10^14) passed straight to redis.call: the
-- number itself in a script (written exactly by Redis 6's "%.14g" and 7's
-- "%.17g"); istr in a function library (digits.lua).
local function ms_arg(x)
  return x
end

-- The Redis server's clock, in microseconds since the Unix epoch.
local function clock()
  local t = rcall('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- TTL in whole milliseconds that outlives the instant until_us, with a
-- millisecond to spare.
local function ttl_ms(until_us, now_us)
  local d = cdiv(until_us - now_us, 1000)
  if d < 1 then
    d = 1
  end
  return ms_arg(d + 1)
end

-- Named limits (limit.Limit.Name) are keyed by their name, and their state
-- carries the tag of the limit it was written for, "q:p:r:c", so that a
-- change of the limit is seen and the state converted (common.lua, named).
-- TAG holds, for this call, the tag of each named key's current limit: a
-- string state is stored as "<state>|<tag>", a log's tag is a member "~tag"
-- scored -1, below every event.
local TAG = {}

-- A string state of limit sp is a key of its own, read by kget, written
-- by kset, deleted by kdel, and read and written by the token bucket's
-- one-step paths. The compact layout's code (layout.go) has compact.lua
-- here, and each GET, SET and DEL of a string state rewritten into its
-- sget, sset and kdel.

-- The value of a string state of limit sp, without its tag.
local function kget(key, sp)
  local s = rcall('GET', key)
  if s and TAG[key] then
    s = smatch(s, '^[^|]*')
  end
  return s
end

-- Store the string state of view v, with its key's tag when it has one.
local function kset(v, val, ms)
  local key = v.key
  local t = TAG[key]
  if t then
    val = val .. '|' .. t
  end
  rcall('SET', key, val, 'PX', ms)
end

-- Delete the state of limit sp.
local function kdel(key, sp)
  rcall('DEL', key)
end

-- Microseconds from the request's instant (the server's clock, raw) until
-- quantum tq, never negative: from now even when the state is ahead of it.
local function after(v, tq)
  local x = tq * v.sp.q - v.raw
  if x < 0 then
    return 0
  end
  return x
end
