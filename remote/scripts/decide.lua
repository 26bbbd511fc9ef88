-- Decide many requests, each for one key against one or more limits, all
-- or nothing per request. ARGV: count, then per request: cost, number of
-- limits, the limits. Reply per request: allowed, binding, remaining,
-- retry (µs), reset (µs), delay (µs). A negative cost is a lease of up to
-- -cost units, as lease.lua takes it; its reply is granted, binding,
-- remaining, retry, reset, delay and the server time (µs) of the lease.
local now = clock()
local out = {}
local oi = 0
local ai = 2
local ki = 1
for _ = 1, tonumber(ARGV[1]) do
  local cost = tonumber(ARGV[ai])
  local nl = tonumber(ARGV[ai + 1])
  local sp, take = nil, nil
  if nl == 1 and cost > 0 then
    sp = read_spec(1, ai + 2)
    if sp.tag == nil then
      take = ALG[sp.alg].take
    end
  end
  if take then
    -- One limit whose algorithm decides a request in one step, without
    -- the tables of the general path below.
    local ok, remaining, retry, reset = take(KEYS[ki], sp, now, cost)
    out[oi + 1] = ok
    out[oi + 2] = 0
    out[oi + 3] = remaining
    out[oi + 4] = retry
    out[oi + 5] = reset
    out[oi + 6] = 0
    oi = oi + 6
    ai = ai + 7
    ki = ki + 1
  elseif cost < 0 then
    local views
    views, ai, ki = read_views(ai + 2, ki, nl, now, true)
    local g, best, d = take_lease(views, -cost)
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
    views, ai, ki = read_views(ai + 2, ki, nl, now, true)
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
