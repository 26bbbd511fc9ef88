-- Reading limits from ARGV and choosing the binding limit, shared by the
-- entry points below. A limit is five integers: algorithm, quantum (µs),
-- period (quanta), rate, capacity; its key is the next one in KEYS.
local function read_views(ai, ki, nl, now)
  local views = {}
  for j = 1, nl do
    local sp = {
      alg = tonumber(ARGV[ai]),
      q = tonumber(ARGV[ai + 1]),
      p = tonumber(ARGV[ai + 2]),
      r = tonumber(ARGV[ai + 3]),
      c = tonumber(ARGV[ai + 4]),
    }
    local A = ALG[sp.alg]
    local v = A.look(KEYS[ki], sp, now)
    v.A = A
    views[j] = v
    ai = ai + 5
    ki = ki + 1
  end
  return views, ai, ki
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
