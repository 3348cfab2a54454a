-- Shared prelude: the one clock, and the helpers every script builds on.
-- Included (textually) at the top of each script by src/redis/scripts.ts.

-- Before Redis 5, a script that read TIME could not write unless it replicated
-- effects rather than the script. Newer servers always do; the call is harmless there.
if redis.replicate_commands then redis.replicate_commands() end

-- "Now" is the server's clock in epoch ms, never the caller's: worker clock skew
-- must not make a job early, late or expired (docs/DESIGN.md invariant 7).
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
-- Found by the first ms_text: a function library may not call `string` while it loads. The build
-- does not change between calls, so the answer is a memo (function-library.ts keeps it).
local MS_FORMAT_MEMO = {}
local function ms_text(ms)
  local format = MS_FORMAT_MEMO.format
  if not format then
    format = string.format('%d', 2 ^ 40) == '1099511627776' and '%d' or '%.0f'
    MS_FORMAT_MEMO.format = format
  end
  return string.format(format, ms)
end

-- The number a setting's text means (tonumber), remembered. A worker sends the same few settings
-- (limit, lease ms, holder, dead bounds, ack count) in every claim, and tonumber is glibc's strtod,
-- ~1,400 instructions a text, where a lookup of the (interned) text is ~100: about 5 % of a claim
-- that finds nothing (bench/redis-instructions.ts --phase=empty). In the function library the memo
-- outlives the call, which is safe because it holds a pure function's answers: whatever call
-- filled it, a text means the same number, so a function behaves as its EVAL script, whose memo
-- starts empty at every call. A `_MEMO` table is the one kind of include table a call may write
-- (function-library.ts). Emptied at SETTING_MEMO_MAX texts, so ever-new texts (holder numbers of
-- new workers) cannot grow it without bound.
local SETTING_MEMO = { numbers = {}, size = 0 }
local SETTING_MEMO_MAX = 1024
local function setting_number(text)
  if text == nil then return nil end
  local memo = SETTING_MEMO
  local n = memo.numbers[text]
  if n == nil then
    if memo.size >= SETTING_MEMO_MAX then memo.numbers, memo.size = {}, 0 end
    -- false, not nil, for a text that is no number: that answer is remembered too.
    n = tonumber(text) or false
    memo.numbers[text] = n
    memo.size = memo.size + 1
  end
  return n or nil
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
