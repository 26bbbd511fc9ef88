-- The compact layout (remote.Layout.Compact; layout.go builds its code):
-- a client's string state is not a key of its own but a field, named by
-- the client's key (layout.go's fieldOf: a long key by its digest), of a
-- hash that the clients of one bucket share. KEYS holds, for such a limit,
-- the name its hashes start with ("<prefix>{{c1#<bucket>}:tb:100:1m:",
-- the layout's version in the tag). Time is cut into generations of the
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
-- fielded computes a bucket's the same way.
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

-- The current generation of limit sp, computed once per call: the ends of
-- the names of its current hash and of the other one, and when the current
-- hash expires (µs): the end of the next generation.
local function gen_of(sp)
  local k = gen_len(sp)
  local g = k * GEN
  local gen = fdiv(NOW, g)
  local par = gen % 2
  sp.gat, sp.gcur, sp.goth, sp.gexp = NOW, str(2 * k + par), str(2 * k + 1 - par), (gen + 2) * g
end

-- MISS[key] is the field of the request whose read of key's state did
-- not find it in the current hash, and FROM[key] that of the request
-- that found it in the other one; the write that follows reads them.
local MISS, FROM = {}, {}

-- The state of key's field: in the current hash, else in the other one.
local function sget(key, sp)
  if sp.keyed then
    return rcall('GET', key)
  end
  if sp.gat ~= NOW then
    gen_of(sp)
  end
  local s = rcall('HGET', key .. sp.gcur, FIELD)
  if s then
    return s
  end
  MISS[key] = FIELD
  s = rcall('HGET', key .. sp.goth, FIELD)
  if s then
    FROM[key] = FIELD
  end
  return s
end

-- Store a state in the current hash. A field the read did not find there
-- is written with the hash's sentinel, the empty field (no key is empty):
-- both new means a new hash, whose expiry is set then. A state read from
-- the other hash leaves it.
local function sset(key, sp, val, _, ms)
  if sp.keyed then
    rcall('SET', key, val, 'PX', ms)
    return
  end
  if sp.gat ~= NOW then
    gen_of(sp)
  end
  local cur = key .. sp.gcur
  if MISS[key] ~= FIELD then
    rcall('HSET', cur, FIELD, val)
    return
  end
  MISS[key] = nil
  if rcall('HSET', cur, FIELD, val, '', '') == 2 then
    rcall('PEXPIRE', cur, ttl_ms(sp.gexp, NOW))
  end
  if FROM[key] == FIELD then
    FROM[key] = nil
    rcall('HDEL', key .. sp.goth, FIELD)
  end
end

-- Forget a state: it may be in either hash.
local function kdel(key, sp)
  if sp.keyed then
    rcall('DEL', key)
    return
  end
  if sp.gat ~= NOW then
    gen_of(sp)
  end
  rcall('HDEL', key .. sp.gcur, FIELD)
  rcall('HDEL', key .. sp.goth, FIELD)
  MISS[key], FROM[key] = nil, nil
end

local base_clock = clock
local function clock()
  NOW = base_clock()
  if next(MISS) ~= nil or next(FROM) ~= nil then -- a library's locals outlive the call
    MISS, FROM = {}, {}
  end
  return NOW
end
