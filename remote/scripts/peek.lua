-- Peek: what a decision of one unit would answer now, charging nothing. A
-- named limit's state written for another limit of its name is converted,
-- as the decision would convert it. ARGV: number of limits, the limits.
-- Reply: allowed, binding, remaining, retry (µs), reset (µs), delay (µs).
local now = clock()
local views = read_views(2, 1, tonumber(ARGV[1]), now, true)
local all = true
for j = 1, #views do
  if not views[j].A.allows(views[j], 1) then
    all = false
  end
end
local best, d = bind(views, 1, all)
return {all and 1 or 0, best, d[1], d[2], d[3], d[4]}
