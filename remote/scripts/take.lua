-- Decide one request against one limit whose algorithm decides a request
-- in one step (TB.take): the decide script's common case, for a call that
-- carries one request, without the library the general path needs (views,
-- bind, leases), which Redis would build on every call. ARGV and reply are
-- decide.lua's with a count of 1.
local now = clock()
local sp = {alg = tonumber(ARGV[4]), q = tonumber(ARGV[5]), p = tonumber(ARGV[6]), r = tonumber(ARGV[7]), c = tonumber(ARGV[8])}
local ok, remaining, retry, reset = ALG[sp.alg].take(KEYS[1], sp, now, tonumber(ARGV[2]))
return {ok, 0, remaining, retry, reset, 0}
