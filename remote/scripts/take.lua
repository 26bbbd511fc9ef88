-- Decide one request against one limit whose algorithm decides a request
-- in one step (TB.take): the decide script's common case, for a call that
-- carries one request, without the library the general path needs (views,
-- bind, leases), which Redis would build on every call. ARGV and reply are
-- decide.lua's for one set of one limit and one request. Only for EVAL: a
-- Redis function library is built once, and its decide does the same.
local now = clock()
local sp = {alg = tonumber(ARGV[3]), q = tonumber(ARGV[4]), p = tonumber(ARGV[5]), r = tonumber(ARGV[6]), c = tonumber(ARGV[7])}
local ok, remaining, retry, reset = ALG[sp.alg].take(KEYS[1], sp, now, floor(tonumber(ARGV[8]) / SETS))
if ok == 1 then
  return {2, remaining, reset}
end
return {3, remaining, retry, reset}
