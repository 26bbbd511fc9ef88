-- SlidingWindowLog: a sorted set of events scored by their microsecond,
-- one member per unit, named "<microsecond>-<sequence>" so that events of
-- one microsecond stay distinct. The key expires with its newest event.
-- The events in (now-P, now] count; those that left it are removed when
-- the key is next charged, as package limit drops them from its log. A
-- newest event ahead of the clock by at most a period counts as no time
-- passed; further ahead (the clock went back), the events after now become
-- events at now, and leave a period after now (package limit, look). A
-- named limit's tag is a member scored -1, which no range of events meets
-- (the newest of a log of no events but the tag reads as none).
local SWL = {}

-- Add n events at ts, numbered from seq.
local function swl_add(key, ts, seq, n)
  local batch = {}
  for i = 0, n - 1 do
    batch[#batch + 1] = ts
    batch[#batch + 1] = ts .. '-' .. sformat('%05d', seq + i)
    if #batch >= 1000 then
      rcall('ZADD', key, unpack(batch))
      batch = {}
    end
  end
  if #batch > 0 then
    rcall('ZADD', key, unpack(batch))
  end
end

-- Move the events after now to now, numbered after those already there.
local function swl_rebase(v)
  local key, ts = v.key, str(v.raw)
  local moved = rcall('ZCOUNT', key, '(' .. ts, '+inf')
  rcall('ZREMRANGEBYSCORE', key, '(' .. ts, '+inf')
  local seq = -1
  local at = rcall('ZREVRANGEBYSCORE', key, ts, ts, 'LIMIT', 0, 1)
  if #at == 1 then
    seq = tonumber(smatch(at[1], '%-(%d+)$')) or 0
  end
  swl_add(key, ts, seq + 1, moved)
  v.newest = v.raw
  v.seq = seq + moved
  rcall('PEXPIRE', key, ttl_ms(v.raw + v.sp.p, v.raw))
end

function SWL.look(key, sp, raw)
  local v = {sp = sp, key = key, raw = raw, now = raw, newest = -1, seq = -1}
  local last = rcall('ZRANGE', key, -1, -1, 'WITHSCORES')
  if #last == 2 and tonumber(last[2]) >= 0 then
    v.newest = tonumber(last[2])
    v.seq = tonumber(smatch(last[1], '%-(%d+)$')) or 0
    if v.newest - raw > sp.p then
      swl_rebase(v)
    elseif v.newest > raw then
      v.now = v.newest
    end
  end
  v.nq = v.now
  v.n = rcall('ZCOUNT', key, '(' .. str(v.now - sp.p), '+inf')
  return v
end

function SWL.avail(v)
  return mmax(v.sp.r - v.n, 0)
end

function SWL.allows(v, cost)
  return v.n + cost <= v.sp.r
end

function SWL.decide(v, cost, ok)
  local sp = v.sp
  local n = v.n
  if ok then
    n = n + cost
  end
  -- Durations count from the request's instant, raw.
  local reset = 0
  local retry = 0
  if ok then
    reset = v.now + sp.p - v.raw
  else
    if n > 0 then
      reset = v.newest + sp.p - v.raw
    end
    local need = v.n + cost - sp.r
    local ev = rcall('ZRANGEBYSCORE', v.key, '(' .. str(v.now - sp.p), '+inf', 'WITHSCORES', 'LIMIT', need - 1, 1)
    if #ev == 2 then
      retry = tonumber(ev[2]) + sp.p - v.raw
    else
      retry = sp.p
    end
  end
  return {sp.r - n, retry, reset, 0}
end

function SWL.commit(v, cost)
  local seq = 0
  if v.newest == v.now then
    seq = v.seq + 1
  end
  rcall('ZREMRANGEBYSCORE', v.key, '0', str(v.now - v.sp.p)) -- not the tag, at -1
  swl_add(v.key, str(v.now), seq, cost)
  if TAG[v.key] then
    rcall('ZADD', v.key, -1, '~' .. TAG[v.key])
  end
  rcall('PEXPIRE', v.key, ttl_ms(v.now + v.sp.p, v.raw))
end

-- Remove the oldest events in the window charged at or after the lease.
function SWL.giveback(v, at, units)
  local from = str(mmax(at, v.now - v.sp.p + 1))
  while units > 0 do
    local m = rcall('ZRANGEBYSCORE', v.key, from, '+inf', 'LIMIT', 0, mmin(units, 500))
    if #m == 0 then
      return
    end
    rcall('ZREM', v.key, unpack(m))
    units = units - #m
  end
end

-- Refund: remove the newest events in the window.
function SWL.refund(v, units)
  local from = '(' .. str(v.now - v.sp.p)
  while units > 0 do
    local m = rcall('ZREVRANGEBYSCORE', v.key, '+inf', from, 'LIMIT', 0, mmin(units, 500))
    if #m == 0 then
      return
    end
    rcall('ZREM', v.key, unpack(m))
    units = units - #m
  end
end

ALG[3] = SWL
