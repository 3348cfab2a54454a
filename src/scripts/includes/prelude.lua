-- Shared prelude: the one clock, and the helpers every script builds on.
-- Included (textually) at the top of each script by src/redis/scripts.ts.

-- Before Redis 5, a script that read TIME could not write unless it replicated
-- effects rather than the script. Newer servers always do; the call is harmless there.
if redis.replicate_commands then redis.replicate_commands() end

-- "Now" is the server's clock in epoch ms, never the caller's: worker clock skew
-- must not make a job early, late or expired (DESIGN invariant 7).
-- The server's clock as epoch ms (rounded down) and as epoch µs (exact in a Lua double until the
-- year 2255); the one place a script reads TIME.
local function now_ms_us()
  local t = redis.call('TIME')
  local s, us = tonumber(t[1]), tonumber(t[2])
  return s * 1000 + math.floor(us / 1000), s * 1000000 + us
end

local function now_ms()
  return (now_ms_us())
end

-- A whole number of ms (a time, a score) as text. '%d' takes glibc's integer path; '%.0f' (and the
-- '%.17g' Redis uses for a Lua number passed to a command) its floating-point one, ~4,000
-- instructions a number (callgrind, bench/redis-instructions.ts). '%d' prints a C long: where that
-- is 32 bits (a 32-bit build), ms times do not fit and '%.0f' stays.
-- Found by the first ms_text of a call: a function library may not call `string` while it loads,
-- so this is per-call state (function-library.ts resets it at each call).
local MS_FORMAT = nil
local function ms_text(ms)
  if not MS_FORMAT then MS_FORMAT = string.format('%d', 2 ^ 40) == '1099511627776' and '%d' or '%.0f' end
  return string.format(MS_FORMAT, ms)
end

-- A whole number as text for a command's argument (a count, an offset, a turn): passed as a Lua
-- number it is formatted with '%.17g' (above); the usual small ones need no formatting at all.
local function int_text(n)
  if n == 0 then return '0' elseif n == 1 then return '1' elseif n == 2 then return '2' end
  return ms_text(n)
end

-- Tell sleeping workers the schedule's head moved earlier than they may know.
local function wake_if_head(schedule_key, wake_channel, due)
  local head = redis.call('ZRANGE', schedule_key, 0, 0, 'WITHSCORES')
  if head[2] and tonumber(head[2]) >= due then
    redis.call('PUBLISH', wake_channel, tostring(due))
  end
end

-- Runs `cmd key args...` with `args` in chunks, so no call unpacks more values than Lua allows.
-- Scripts write a batch's jobs with one call per key this way: each redis.call costs Redis more
-- than the command itself (argument conversion, lookup, bookkeeping).
local UNPACK_CHUNK = 1000
local function call_chunked(cmd, key, args, per_item)
  for first = 1, #args, UNPACK_CHUNK * per_item do
    local last = math.min(#args, first + UNPACK_CHUNK * per_item - 1)
    redis.call(cmd, key, unpack(args, first, last))
  end
end
