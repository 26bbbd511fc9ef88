-- TokenBucket. The state is one integer, (nq*R + deficit) mod 2^52, where
-- the deficit is capacity minus tokens, scaled by the period in quanta; the
-- key expires when the bucket is full again. Reading it back against the
-- current quantum recovers the deficit, refilled (package limit, look).
local TB = {}

-- The deficit a stored state s (or nil) holds at the quantum whose base
-- (nq*R mod 2^52) is given. Above the capacity when the clock went back,
-- which a forward clock cannot produce: the caller then makes the bucket
-- empty as of now, and stores it so, or it would stay empty until the
-- clock caught up (package limit, look).
local function tb_deficit(s, base)
  if not s then
    return 0
  end
  -- s, a string, is read by the subtraction itself, as tonumber reads it
  -- but without its call (BenchmarkScriptInstructions).
  local diff = (s - base) % TWO52
  if diff >= TWO51 then
    diff = diff - TWO52
  end
  if diff < 0 then
    return 0
  end
  return diff
end

-- The quantum of raw and its base (nq*R mod 2^52) for limit sp, computed
-- once per instant: the requests of a call share sp and the server time
-- (and a library keeps sp between calls).
local function tb_now(sp, raw)
  if sp.raw ~= raw then
    local nq = fdiv(raw, sp.q)
    sp.raw, sp.nq, sp.base = raw, nq, modmul(nq, sp.r)
  end
  return sp.nq, sp.base
end

function TB.look(key, sp, raw)
  local nq, base = tb_now(sp, raw)
  local v = {sp = sp, key = key, raw = raw, now = raw, nq = nq, d = 0, base = base}
  v.d = tb_deficit(kget(key, sp), v.base)
  if v.d > sp.c * sp.p then
    v.d = sp.c * sp.p
    TB.store(v, v.d)
  end
  return v
end

-- tb_admit stores the deficit d of an admitted request (the cost already
-- in it) for bucket sp at the instant raw, of quantum nq and base, and
-- returns the remaining and the µs until the bucket is full: the admitted
-- path of take and take_all, most requests of a cold key. cdiv, fdiv,
-- mod52 and ttl_ms are written out, each as its helper computes it, the
-- remainders brought into [0, b) as fdiv brings them: a Lua call costs
-- Redis more than the arithmetic it wraps (BenchmarkScriptInstructions).
local function tb_admit(key, sp, nq, base, raw, d)
  local r, p = sp.r, sp.p
  -- cdiv(d, r): the quantum the bucket is full again
  local m = -d % r
  if m < 0 then
    m = m + r
  elseif m >= r then
    m = m - r
  end
  local after_us = (nq + (d + m) / r) * sp.q - raw
  -- ttl_ms(reset, raw): cdiv(after_us, 1000), at least 1, plus 1
  m = -after_us % 1000
  if m < 0 then
    m = m + 1000
  elseif m >= 1000 then
    m = m - 1000
  end
  local ms = (after_us + m) / 1000
  if ms < 1 then
    ms = 1
  end
  rcall('SET', key, str((base + d) % TWO52), 'PX', ms_arg(ms + 1))
  -- fdiv(full - d, p): the remaining
  local a = sp.c * p - d
  m = a % p
  if m < 0 then
    m = m + p
  elseif m >= p then
    m = m - p
  end
  if after_us < 0 then
    after_us = 0
  end
  return (a - m) / p, after_us
end

-- take decides a request of cost units against this limit alone, exactly
-- as look, allows, commit and decide do, without their tables: most
-- requests of a decide call are one token bucket. Never for a named limit. Returns allowed (1 or 0),
-- remaining, retry and reset (µs). Its state's read (tb_deficit) is
-- written out too.
function TB.take(key, sp, raw, cost)
  local q, p, r = sp.q, sp.p, sp.r
  local nq, base = sp.nq, sp.base -- tb_now's, if computed for raw
  if sp.raw ~= raw then
    nq, base = tb_now(sp, raw)
  end
  local s = rcall('GET', key)
  local d = 0
  if s then -- tb_deficit
    d = (s - base) % TWO52
    if d >= TWO51 then
      d = d - TWO52
    end
    if d < 0 then
      d = 0
    end
  end
  local full, need = sp.c * p, cost * p
  if d + need > full then
    if d > full then
      -- The clock went back (tb_deficit): empty as of now.
      d = full
      rcall('SET', key, str(mod52(base + full)), 'PX', ttl_ms((nq + cdiv(full, r)) * q, raw))
    end
    return 0, mmax(fdiv(full - d, p), 0), mmax((nq + cdiv(d + need - full, r)) * q - raw, 0),
      mmax((nq + cdiv(d, r)) * q - raw, 0)
  end
  local rem, after_us = tb_admit(key, sp, nq, base, raw, d + need)
  return 1, rem, 0, after_us
end

-- take_all_ds holds a request's deficits between take_all's two passes:
-- one table for every request (a table a request costs Redis more).
local take_all_ds = {}

-- take_all decides a request of cost units against unnamed token and
-- leaky buckets sps, whose keys are KEYS[ki] on, all or nothing, exactly
-- as look, allows, commit and bind do, without their tables: a request
-- against 100/min and 1000/hour, or against a leaky bucket. Returns
-- allowed (1 or 0), the binding limit's index (from 0), its remaining,
-- retry and reset, and the delay (µs): the longest wait, when allowed,
-- before a leaky bucket's queue reaches the request (its decide).
function TB.take_all(ki, sps, raw, cost)
  local ds = take_all_ds
  local all = true
  for j = 1, #sps do
    local sp = sps[j]
    local nq, base = sp.nq, sp.base -- tb_now's, if computed for raw
    if sp.raw ~= raw then
      nq, base = tb_now(sp, raw)
    end
    local key = KEYS[ki + j - 1]
    local d = tb_deficit(rcall('GET', key), base)
    local full = sp.c * sp.p
    if d > full then
      -- The clock went back (tb_deficit): empty as of now, as look stores it.
      d = full
      rcall('SET', key, str(mod52(base + full)), 'PX', ttl_ms((nq + cdiv(full, sp.r)) * sp.q, raw))
    end
    ds[j] = d
    if d + cost * sp.p > full then
      all = false
    end
  end
  -- As bind: allowed, the limit with the fewest remaining; denied, the
  -- denying limit with the longest retry; the first of equals.
  local best, brem, bretry, breset, delay = -1, 0, 0, 0, 0
  for j = 1, #sps do
    local sp = sps[j]
    local q, p, r = sp.q, sp.p, sp.r
    local nq, base = sp.nq, sp.base -- the first pass's (tb_now)
    local d, full, need = ds[j], sp.c * p, cost * p
    if all then
      local rem, after_us = tb_admit(KEYS[ki + j - 1], sp, nq, base, raw, d + need)
      if best < 0 or rem < brem then
        best, brem, bretry, breset = j - 1, rem, 0, after_us
      end
      if sp.alg == 1 then -- leaky: until the deficit before this request drains
        local w = (nq + cdiv(d, r)) * q - raw
        if w > delay then
          delay = w
        end
      end
    elseif d + need > full then
      local retry = mmax((nq + cdiv(d + need - full, r)) * q - raw, 0)
      if best < 0 or retry > bretry then
        best, brem, bretry, breset = j - 1, mmax(fdiv(full - d, p), 0), retry, mmax((nq + cdiv(d, r)) * q - raw, 0)
      end
    end
  end
  return all and 1 or 0, best, brem, bretry, breset, delay
end

function TB.avail(v)
  return mmax(fdiv(v.sp.c * v.sp.p - v.d, v.sp.p), 0)
end

function TB.allows(v, cost)
  return v.d + cost * v.sp.p <= v.sp.c * v.sp.p
end

function TB.decide(v, cost, ok)
  local sp = v.sp
  local d = v.d
  if ok then
    d = d + cost * sp.p
  end
  local retry = 0
  if not ok then
    retry = after(v, v.nq + cdiv(v.d + cost * sp.p - sp.c * sp.p, sp.r))
  end
  return {mmax(fdiv(sp.c * sp.p - d, sp.p), 0), retry, after(v, v.nq + cdiv(d, sp.r)), 0}
end

function TB.store(v, d)
  if d <= 0 then
    kdel(v.key, v.sp)
    return
  end
  local until_us = (v.nq + cdiv(d, v.sp.r)) * v.sp.q
  kset(v, str(mod52(v.base + d)), ttl_ms(until_us, v.raw))
end

function TB.commit(v, cost)
  TB.store(v, v.d + cost * v.sp.p)
end

function TB.giveback(v, at, units)
  local d = v.d - units * v.sp.p
  if d < 0 then
    d = 0
  end
  TB.store(v, d)
end

-- Refund: a bucket gets units back whenever they were taken.
function TB.refund(v, units)
  TB.giveback(v, 0, units)
end

ALG[0] = TB
