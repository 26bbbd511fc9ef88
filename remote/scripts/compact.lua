-- The compact layout (remote.Layout.Compact; layout.go builds its code):
-- a client's string state is not a key of its own but a field, named by
-- the client's key, of a hash that the clients of one bucket share. KEYS
-- holds, for such a limit, the name its hashes start with
-- ("<prefix>{#<bucket>}c1<limit>:"). Time is cut into generations of the
-- limit's generation length (GEN, or the whole number of GENs the
-- limit's states can live), counted on the server's clock, and a limit
-- has two hashes, one for the even generations and one for the odd ones;
-- the name ends with 2 × the length in GENs + the generation's parity.
--
-- A state is written to the current generation's hash, and read from it,
-- else from the other one: a state lives at most a generation length (the
-- TTL the key of its own would have), so it is in one of the two, and the
-- other is the next generation's as well as the previous one's, which
-- covers a server clock that steps back by up to a generation. A state
-- read from the other hash is removed from it when it is written to the
-- current one, so that a key has one copy, the newest. A hash expires at
-- the end of the generation after the one that created it, on the
-- server's timers, before its name comes round again. A stale state read
-- back means what a missing one means (the algorithms decode it so: a
-- bucket full again, a window gone), so no field needs an expiry of its
-- own.
--
-- A limit that keeps a key of its own in this layout (a SlidingWindowLog,
-- a bucket whose state would wrap within two generations) comes with its
-- algorithm plus KEYED and its own key in KEYS, and is read and written as
-- in the default layout.
local KEYED = 16
local GEN = 3600000000 -- µs: an hour

-- The field of the request being decided: its client's key. The entry
-- points set it from ARGV.
local FIELD = nil

-- The server's time of the call (clock, below).
local NOW = 0

-- The generation length of limit sp in GENs: the longest its state lives
-- (the key of its own would expire then), rounded up. layout.go's
-- stateLife is the same.
local function gen_len(sp)
  local k = sp.glen
  if not k then
    local life
    if sp.alg == 2 then -- FixedWindow: the end of the window
      life = sp.p * sp.q
    elseif sp.alg == 4 then -- SlidingWindowCounter: the end of the next window
      life = 2 * sp.p * sp.q
    else -- the buckets: full again
      life = cdiv(sp.c * sp.p, sp.r) * sp.q
    end
    k = mmax(cdiv(life, GEN), 1)
    sp.glen = k
  end
  return k
end

-- The names of limit sp's hashes now: the current generation's, the
-- other one, and the current generation's number and length (µs).
local function hashes(key, sp)
  local k = gen_len(sp)
  local g = k * GEN
  local gen = fdiv(NOW, g)
  local par = gen % 2
  return key .. (2 * k + par), key .. (2 * k + 1 - par), gen, g
end

-- The hash each key's state was last read from, when it was the other
-- one: the write that follows removes it there.
local FROM = {}

-- The state of key's field: in the current hash, else in the other one.
sget = function(key, sp)
  if sp.keyed then
    return rcall('GET', key)
  end
  local cur, other = hashes(key, sp)
  FROM[key] = nil
  local s = rcall('HGET', cur, FIELD)
  if s then
    return s
  end
  s = rcall('HGET', other, FIELD)
  if s then
    FROM[key] = other
  end
  return s
end

-- Store a state in the current hash. A field new to it may be the hash's
-- first, so the hash's expiry is set then: the end of the next
-- generation. A state read from the other hash leaves it.
sset = function(key, sp, val, _, ms)
  if sp.keyed then
    rcall('SET', key, val, 'PX', ms)
    return
  end
  local cur, _, gen, g = hashes(key, sp)
  if rcall('HSET', cur, FIELD, val) == 1 then
    rcall('PEXPIRE', cur, ttl_ms((gen + 2) * g, NOW))
  end
  local from = FROM[key]
  if from then
    rcall('HDEL', from, FIELD)
    FROM[key] = nil
  end
end

-- Forget a state: it may be in either hash.
kdel = function(key, sp)
  if sp.keyed then
    rcall('DEL', key)
    return
  end
  local cur, other = hashes(key, sp)
  rcall('HDEL', cur, FIELD)
  rcall('HDEL', other, FIELD)
  FROM[key] = nil
end

local base_clock = clock
local function clock()
  NOW = base_clock()
  if next(FROM) ~= nil then -- a library's locals outlive the call
    FROM = {}
  end
  return NOW
end
