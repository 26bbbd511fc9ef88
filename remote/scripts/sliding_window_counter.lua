-- SlidingWindowCounter: "T:current:previous", T the time of the last
-- charge; the estimate is compared exactly, multiplied out by the period.
-- The key expires at the end of the window after T's. A T ahead of the
-- clock by at most a period counts as no time passed; further ahead (the
-- clock went back), T becomes now, both counts kept, and is stored so.
local SWC = {}

function SWC.look(key, sp, raw)
  local v = {sp = sp, key = key, raw = raw, d = 0, prev = 0}
  local t = 0
  local a = 0
  local b = 0
  local s = kget(key, sp)
  if s then
    local x, y, z = smatch(s, '^(%d+):(%d+):(%d+)$')
    if x then
      t = tonumber(x)
      a = tonumber(y)
      b = tonumber(z)
    end
  end
  local rebase = t - raw > sp.p * sp.q
  if rebase then
    t = raw
  end
  v.now = mmax(raw, t)
  v.nq = fdiv(v.now, sp.q)
  v.k = fdiv(v.nq, sp.p)
  if t ~= 0 then
    local tk = fdiv(fdiv(t, sp.q), sp.p)
    if tk == v.k then
      v.d = a
      v.prev = b
    elseif tk == v.k - 1 then
      v.prev = a
    end
  end
  if rebase then
    SWC.store(v, a, b)
  end
  return v
end

local function swc_elapsed(v)
  return v.nq - v.k * v.sp.p
end

function SWC.avail(v)
  local sp = v.sp
  return mmax(fdiv(sp.r * sp.p - v.prev * (sp.p - swc_elapsed(v)), sp.p) - v.d, 0)
end

function SWC.allows(v, cost)
  local sp = v.sp
  return v.prev * (sp.p - swc_elapsed(v)) + (v.d + cost) * sp.p <= sp.r * sp.p
end

-- The first quantum at which cost fits if nothing else is charged.
local function swc_retry(v, cost)
  local sp = v.sp
  local a = (sp.r - v.d - cost) * sp.p
  if a >= 0 and v.prev > 0 then
    local e = sp.p - fdiv(a, v.prev)
    if e < sp.p then
      return v.k * sp.p + e
    end
  end
  local e = 0
  if v.d > 0 then
    e = mmax(sp.p - fdiv((sp.r - cost) * sp.p, v.d), 0)
  end
  return (v.k + 1) * sp.p + e
end

function SWC.decide(v, cost, ok)
  local sp = v.sp
  local cur = v.d
  if ok then
    cur = cur + cost
  end
  local rem = mmax(fdiv(sp.r * sp.p - v.prev * (sp.p - swc_elapsed(v)), sp.p) - cur, 0)
  local reset = 0
  if cur > 0 then
    reset = after(v, (v.k + 2) * sp.p)
  elseif v.prev > 0 then
    reset = after(v, (v.k + 1) * sp.p)
  end
  local retry = 0
  if not ok then
    retry = after(v, swc_retry(v, cost))
  end
  return {rem, retry, reset, 0}
end

function SWC.store(v, cur, prev)
  local val = str(v.now) .. ':' .. str(cur) .. ':' .. str(prev)
  kset(v, val, ttl_ms((v.k + 2) * v.sp.p * v.sp.q, v.raw))
end

function SWC.commit(v, cost)
  SWC.store(v, v.d + cost, v.prev)
end

function SWC.giveback(v, at, units)
  local lk = fdiv(fdiv(at, v.sp.q), v.sp.p)
  if lk == v.k and v.d > 0 then
    SWC.store(v, mmax(v.d - units, 0), v.prev)
  elseif lk == v.k - 1 and v.prev > 0 then
    SWC.store(v, v.d, mmax(v.prev - units, 0))
  end
end

-- Refund: give units back to the current window's count, then to the
-- previous window's.
function SWC.refund(v, units)
  if v.d > 0 or v.prev > 0 then
    local cur = mmin(v.d, units)
    SWC.store(v, v.d - cur, mmax(v.prev - (units - cur), 0))
  end
end

ALG[4] = SWC
