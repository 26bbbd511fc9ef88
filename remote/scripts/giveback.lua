-- Give back units of a lease taken at server time `at`, never above the
-- limits' capacity. ARGV: units, at (µs), number of limits, the limits. An
-- `at` below 0 is a refund: units given back now, whenever they were taken
-- (the newest events of a SlidingWindowLog).
-- Nothing goes back to a named limit's state converted since the lease: it
-- carries no trace of which units the lease held.
local now = clock()
local units = tonumber(ARGV[1])
local at = tonumber(ARGV[2])
local views = read_views(4, 1, tonumber(ARGV[3]), now, false)
give_back(views, at, units)
return #views
