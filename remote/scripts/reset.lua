-- Reset, in the compact layout: forget the states of one key's limits,
-- wherever the layout keeps them (compact.lua). ARGV: number of limits,
-- the limits, the key (the field). Reply: the number of limits. The
-- default layout deletes its keys with one DEL instead.
local now = clock()
FIELD = ARGV[#ARGV]
local sps = read_specs(2, tonumber(ARGV[1]))
for j = 1, #sps do
  kdel(KEYS[j], sps[j])
end
return #sps
