-- Lease: take up to want units from all the limits of one key at once, as
-- many as every one of them admits now. ARGV: want, number of limits, the
-- limits. Reply: granted, binding, remaining, retry (µs), reset (µs),
-- delay (µs), server time (µs) of the lease.
local now = clock()
local want = tonumber(ARGV[1])
local views = read_views(3, 1, tonumber(ARGV[2]), now)
local g = want
for j = 1, #views do
  g = mmin(g, views[j].A.avail(views[j]))
end
local best, d
if g >= 1 then
  for j = 1, #views do
    views[j].A.commit(views[j], g)
  end
  best, d = bind(views, g, true)
else
  g = 0
  best, d = bind(views, 1, false)
end
return {g, best, d[1], d[2], d[3], d[4], now}
