-- FixedWindow: "T:count", T the time of the last charge; the key expires
-- at the end of T's window. A T ahead of the clock by at most a period
-- counts as no time passed; further ahead (the clock went back), the count
-- is now's window's, and is stored so (package limit, look).
local FW = {}

function FW.look(key, sp, raw)
  local v = {sp = sp, key = key, raw = raw, d = 0}
  local t = 0
  local n = 0
  local s = kget(key, sp)
  if s then
    local a, b = smatch(s, '^(%d+):(%d+)$')
    if a then
      t = tonumber(a)
      n = tonumber(b)
    end
  end
  local rebase = t - raw > sp.p
  if rebase then
    t = raw
  end
  v.now = mmax(raw, t)
  v.nq = v.now
  v.k = fdiv(v.now, sp.p)
  if t ~= 0 and fdiv(t, sp.p) == v.k then
    v.d = n
  end
  if rebase then
    FW.store(v, n)
  end
  return v
end

function FW.avail(v)
  return mmax(v.sp.r - v.d, 0)
end

function FW.allows(v, cost)
  return v.d + cost <= v.sp.r
end

function FW.decide(v, cost, ok)
  local n = v.d
  if ok then
    n = n + cost
  end
  local e = after(v, (v.k + 1) * v.sp.p)
  local reset = 0
  if n > 0 then
    reset = e
  end
  local retry = 0
  if not ok then
    retry = e
  end
  return {v.sp.r - n, retry, reset, 0}
end

function FW.store(v, n)
  kset(v, str(v.now) .. ':' .. str(n), ttl_ms((v.k + 1) * v.sp.p, v.raw))
end

function FW.commit(v, cost)
  FW.store(v, v.d + cost)
end

function FW.giveback(v, at, units)
  if fdiv(at, v.sp.p) == v.k and v.d > 0 then
    FW.store(v, mmax(v.d - units, 0))
  end
end

-- Refund: give units back to the current window's count.
function FW.refund(v, units)
  if v.d > 0 then
    FW.store(v, mmax(v.d - units, 0))
  end
end

ALG[2] = FW
