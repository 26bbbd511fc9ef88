-- Decide many requests, each for one key against one or more limits, all
-- or nothing per request. The limits are sent once per call, as sets that
-- the requests name: ARGV is the number of sets, then per set its number
-- of limits and the limits, then one integer per request, its head:
-- cost × SETS + set (the set's index from 0) for a decision, minus
-- (units × SETS + set) for a lease of up to that many units, and
-- GIVE + units × SETS + set for a give-back of a lease's units, followed by
-- the server time (µs) the lease was taken at. KEYS holds each request's
-- keys, one per limit of its set.
-- Reply per request: for a decision against one unnamed limit whose
-- algorithm decides it in one step (TB.take), 2, remaining, reset when
-- allowed and 3, remaining, retry, reset when denied (retry and reset in
-- µs); for another decision allowed (1 or 0), binding, remaining, retry,
-- reset, delay (unnamed token and leaky buckets in one step, TB.take_all); for a lease, as lease.lua takes it, granted, binding,
-- remaining, retry, reset, delay and the server time (µs) of the lease;
-- for a give-back nothing (giveback.lua's, batched).
local now = clock()
local sets, ai = read_sets()
local out = {}
local oi = 0
local ki = 1
-- Heads repeat (most requests are of one unit against one set), and Lua
-- strings are interned: one comparison replaces reading a head (a
-- tonumber and a math.floor, each a call) per request.
local last, lease, give, cost, set = nil, false, false, 0, nil
local i, nargs = ai, #ARGV
while i <= nargs do
  local hs = ARGV[i]
  i = i + 1
  if hs ~= last then
    last = hs
    local h = tonumber(hs)
    lease = h < 0
    if lease then
      h = -h
    end
    give = h >= GIVE
    if give then
      h = h - GIVE
    end
    cost = floor(h / SETS)
    set = sets[h - cost * SETS + 1]
  end
  local take = set.take
  if give then
    local at = tonumber(ARGV[i])
    i = i + 1
    local views
    views, ki = views_of(set.sps, ki, now, false)
    give_back(views, at, cost)
  elseif take and not lease then
    local ok, remaining, retry, reset = take(KEYS[ki], set.sps[1], now, cost)
    ki = ki + 1
    if ok == 1 then
      out[oi + 1] = 2
      out[oi + 2] = remaining
      out[oi + 3] = reset
      oi = oi + 3
    else
      out[oi + 1] = 3
      out[oi + 2] = remaining
      out[oi + 3] = retry
      out[oi + 4] = reset
      oi = oi + 4
    end
  elseif set.take_all and not lease then
    local ok, best, remaining, retry, reset, delay = set.take_all(ki, set.sps, now, cost)
    ki = ki + #set.sps
    out[oi + 1] = ok
    out[oi + 2] = best
    out[oi + 3] = remaining
    out[oi + 4] = retry
    out[oi + 5] = reset
    out[oi + 6] = delay
    oi = oi + 6
  elseif lease then
    local views
    views, ki = views_of(set.sps, ki, now, true)
    local g, best, d = take_lease(views, cost)
    out[oi + 1] = g
    out[oi + 2] = best
    out[oi + 3] = d[1]
    out[oi + 4] = d[2]
    out[oi + 5] = d[3]
    out[oi + 6] = d[4]
    out[oi + 7] = now
    oi = oi + 7
  else
    local views
    views, ki = views_of(set.sps, ki, now, true)
    local nl = #views
    local all = true
    for j = 1, nl do
      if not views[j].A.allows(views[j], cost) then
        all = false
      end
    end
    if all then
      for j = 1, nl do
        views[j].A.commit(views[j], cost)
      end
    end
    local best, d = bind(views, cost, all)
    out[oi + 1] = all and 1 or 0
    out[oi + 2] = best
    out[oi + 3] = d[1]
    out[oi + 4] = d[2]
    out[oi + 5] = d[3]
    out[oi + 6] = d[4]
    oi = oi + 6
  end
end
return out
