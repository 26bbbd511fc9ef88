-- Reading limits from ARGV and choosing the binding limit, shared by the
-- entry points below. A limit is five integers: algorithm, quantum (µs),
-- period (quanta), rate, capacity; its key is the next one in KEYS.
-- The spec of the limit read last at each position of ARGV: calls repeat
-- their limits at the same positions, and Redis interns strings, so five
-- comparisons of ARGV strings replace five tonumber calls and a table (a
-- library's functions keep these between calls).
local last_args = {}

-- The spec of the limit at ARGV[ai].
-- A named limit's algorithm is sent plus NAMED, with its tag in sp.
local NAMED = 8

local function read_spec(ai)
  local a1, a2, a3, a4, a5 = ARGV[ai], ARGV[ai + 1], ARGV[ai + 2], ARGV[ai + 3], ARGV[ai + 4]
  local l = last_args[ai]
  if l and l[1] == a1 and l[2] == a2 and l[3] == a3 and l[4] == a4 and l[5] == a5 then
    return l.sp
  end
  local sp = {alg = tonumber(a1), q = tonumber(a2), p = tonumber(a3), r = tonumber(a4), c = tonumber(a5)}
  if sp.alg >= NAMED then
    sp.alg = sp.alg - NAMED
    sp.tag = a2 .. ':' .. a3 .. ':' .. a4 .. ':' .. a5
  end
  last_args[ai] = {a1, a2, a3, a4, a5, sp = sp}
  return sp
end

-- The specs of nl limits from ARGV[ai] on, and the index after them.
local function read_specs(ai, nl)
  local sps = {}
  for j = 1, nl do
    sps[j] = read_spec(ai)
    ai = ai + 5
  end
  return sps, ai
end

-- The sets of limits of a decide call (decide.lua): ARGV[1] sets, each
-- its number of limits, then the limits. A busy node sees the same sets
-- call after call, and a library keeps these between calls: when ARGV
-- starts with the strings the sets were read from last (interned: a
-- comparison each; the section's counts delimit it), they are reused.
-- Returns the sets and the index of the first head.
local sets_args, sets_read, sets_end = {}, nil, 0

local function read_sets()
  if sets_read then
    local same = true
    for i = 1, sets_end - 1 do
      if ARGV[i] ~= sets_args[i] then
        same = false
        break
      end
    end
    if same then
      return sets_read, sets_end
    end
  end
  local sets, ai = {}, 2
  for s = 1, tonumber(ARGV[1]) do
    local nl = tonumber(ARGV[ai])
    local sps
    sps, ai = read_specs(ai + 1, nl)
    local take = false
    if nl == 1 and sps[1].tag == nil then
      take = ALG[sps[1].alg].take or false
    end
    -- Unnamed token and leaky buckets are decided in one step (TB.take_all),
    -- but a lone token bucket, which take decides.
    local all = ALG[0] and ALG[0].take_all or false
    local leaky = false
    for j = 1, nl do
      local a = sps[j].alg
      if (a ~= 0 and a ~= 1) or sps[j].tag ~= nil then
        all = false
      end
      leaky = leaky or a == 1
    end
    if nl == 1 and not leaky then
      all = false
    end
    sets[s] = {sps = sps, take = take, take_all = all}
  end
  sets_args = {}
  for i = 1, ai - 1 do
    sets_args[i] = ARGV[i]
  end
  sets_read, sets_end = sets, ai
  return sets, ai
end

-- The tag a named key's state was written with, or nil.
local function stored_tag(key, sp)
  if sp.alg == 3 then -- SlidingWindowLog
    local m = rcall('ZRANGEBYSCORE', key, -1, -1)
    if #m > 0 then
      return string.sub(m[1], 2)
    end
    return nil
  end
  local s = rcall('GET', key)
  if s then
    return smatch(s, '|(.*)$')
  end
  return nil
end

-- Make named key's state that of sp, the limit its request names. A state
-- written for another limit of that name is converted when convert is set
-- (limit.Spec.Convert): the units in use at now, its capacity minus what it
-- admits, are charged afresh to sp, at most sp's capacity. Otherwise the
-- state is left alone and named returns false.
local function named(key, sp, now, convert)
  local old = stored_tag(key, sp)
  TAG[key] = sp.tag
  if not old or old == sp.tag then
    return true
  end
  if not convert then
    TAG[key] = nil
    return false
  end
  local A = ALG[sp.alg]
  local used = 0
  local q, p, r, c = smatch(old, '^(%d+):(%d+):(%d+):(%d+)$')
  if q then
    local from = {alg = sp.alg, q = tonumber(q), p = tonumber(p), r = tonumber(r), c = tonumber(c), tag = old}
    TAG[key] = old
    used = from.c - A.avail(A.look(key, from, now))
    TAG[key] = sp.tag
  end
  kdel(key, sp)
  if used > 0 then
    A.commit(A.look(key, sp, now), mmin(used, sp.c))
  end
  return true
end

-- The views of a request's limits, specs sps, whose keys are KEYS[ki]
-- on, and the index after them. A named limit's state written for another
-- limit of its name is converted when convert is set; otherwise its view
-- is false.
local function views_of(sps, ki, now, convert)
  local views = {}
  for j = 1, #sps do
    local sp = sps[j]
    local A = ALG[sp.alg]
    local key = KEYS[ki]
    if sp.tag == nil or named(key, sp, now, convert) then
      local v = A.look(key, sp, now)
      v.A = A
      views[j] = v
    else
      views[j] = false
    end
    ki = ki + 1
  end
  return views, ki
end

-- Give units back to views (views_of, false for a named limit's state
-- written for another limit: nothing goes back to it), taken at server
-- time at, never above their capacity; an at below 0 refunds them now,
-- whenever they were taken. giveback.lua's, and a give-back's in decide.
local function give_back(views, at, units)
  for j = 1, #views do
    if views[j] and at < 0 then
      views[j].A.refund(views[j], units)
    elseif views[j] then
      views[j].A.giveback(views[j], at, units)
    end
  end
end

-- The views of a request's nl limits, from ARGV[ai] and KEYS[ki] on (see
-- views_of).
local function read_views(ai, ki, nl, now, convert)
  local sps = read_specs(ai, nl)
  return views_of(sps, ki, now, convert)
end

-- As limit.bind: when denied, the denying limit with the longest retry;
-- when allowed, the one with the fewest remaining; the longest delay.
local function bind(views, cost, allowed)
  local best = -1
  local out = nil
  local delay = 0
  for j = 1, #views do
    local v = views[j]
    local ok = allowed
    local consider = true
    if not allowed then
      ok = v.A.allows(v, cost)
      consider = not ok
    end
    if consider then
      local d = v.A.decide(v, cost, ok)
      if d[4] > delay then
        delay = d[4]
      end
      if out == nil or ((not allowed) and d[2] > out[2]) or (allowed and d[1] < out[1]) then
        out = d
        best = j - 1
      end
    end
  end
  out[4] = delay
  return best, out
end

-- Take up to want units from all the views at once, as many as every one
-- of them admits now: the units granted (0 when any limit has none, and then
-- nothing is charged), the binding limit and its decision.
local function take_lease(views, want)
  local g = want
  for j = 1, #views do
    g = mmin(g, views[j].A.avail(views[j]))
  end
  if g < 1 then
    local best, d = bind(views, 1, false)
    return 0, best, d
  end
  for j = 1, #views do
    views[j].A.commit(views[j], g)
  end
  local best, d = bind(views, g, true)
  return g, best, d
end
