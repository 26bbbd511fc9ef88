-- The function library's integer writer, istr, which takes the place of
-- the prelude's str and ms_arg there (newLibrary). Not in scripts.

-- DIG[i] is i in decimal digits and PAD[i] the same to three digits, for
-- i in 0..999: istr's tables, which a function library builds once, on its
-- first call, and keeps. Three digits, not four: Redis steps Lua's garbage
-- collector by a fixed amount every 50 calls, a step costs more the more
-- the heap holds: with tables of four digits a call of one request took
-- 15 % more instructions than with numbers passed to redis.call, with
-- three it takes as many (BenchmarkScriptInstructions).
local DIG, PAD
local function digit_tables()
  local d = {[0] = '0', '1', '2', '3', '4', '5', '6', '7', '8', '9'}
  DIG, PAD = {}, {}
  for a = 0, 9 do
    for b = 0, 9 do
      for c = 0, 9 do
        local i = (a * 10 + b) * 10 + c
        PAD[i] = d[a] .. d[b] .. d[c]
        if i >= 100 then
          DIG[i] = PAD[i]
        elseif i >= 10 then
          DIG[i] = d[b] .. d[c]
        else
          DIG[i] = d[c]
        end
      end
    end
  end
end

-- The integer x (|x| < 2^53) in decimal digits, as str writes it, from
-- groups of three digits: a division per group and one concatenation.
-- Redis 7.0 writes a number passed to redis.call with snprintf("%.17g"),
-- and string.format is snprintf too, which glibc does digit by digit in
-- multiple precision: istr takes a token bucket's request (its state and
-- its TTL) 2,600 instructions below that, 7 % of it
-- (BenchmarkScriptInstructions). Only in a function library: a script
-- would build the tables on every call, and define istr on every call too
-- (a script's whole chunk runs on each call).
local function istr(x)
  if x < 0 then
    return '-' .. istr(-x)
  end
  if x < 1000 then
    return DIG[x]
  end
  -- Each % is exact: x/1000 is never rounded to an integer below 2^53.
  local a = x % 1000
  local y = (x - a) / 1000
  if y < 1000 then
    return DIG[y] .. PAD[a]
  end
  local b = y % 1000
  y = (y - b) / 1000
  if y < 1000 then
    return DIG[y] .. PAD[b] .. PAD[a]
  end
  local c = y % 1000
  y = (y - c) / 1000
  if y < 1000 then
    return DIG[y] .. PAD[c] .. PAD[b] .. PAD[a]
  end
  local e = y % 1000
  y = (y - e) / 1000
  if y < 1000 then
    return DIG[y] .. PAD[e] .. PAD[c] .. PAD[b] .. PAD[a]
  end
  local f = y % 1000
  y = (y - f) / 1000
  if y < 1000 then
    return DIG[y] .. PAD[f] .. PAD[e] .. PAD[c] .. PAD[b] .. PAD[a]
  end
  return sformat('%.0f', x)
end

str, ms_arg = istr, istr
