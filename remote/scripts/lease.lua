-- Lease: take up to want units from all the limits of one key at once, as
-- many as every one of them admits now. ARGV: want, number of limits, the
-- limits. Reply: granted, binding, remaining, retry (µs), reset (µs),
-- delay (µs), server time (µs) of the lease.
local now = clock()
local want = tonumber(ARGV[1])
local views = read_views(3, 1, tonumber(ARGV[2]), now, true)
local g, best, d = take_lease(views, want)
return {g, best, d[1], d[2], d[3], d[4], now}
