-- Checks of the ARGV a caller passes, for the scripts a producer in another language calls
-- directly (docs/PROTOCOL.md): such a producer has no TypeScript validation in front of it, so a
-- value in seconds instead of ms, a negative delay or a float must be refused here, by name,
-- before anything is written, never stored as it came (DESIGN invariant 10).
-- Each check returns nil when the value is good, else the reason (a string); the script returns
-- bad_arg(reason), an error reply 'DELAYQ_BAD_ARG <reason>' (src/redis/script-errors.ts).

-- Due times outside [2000-01-01, 9999-12-31] are refused: a due time in 1970 is almost always
-- epoch seconds passed as ms, and past 9999 ISO dates need six-digit years.
local MIN_DUE_MS = 946684800000
local MAX_DUE_MS = 253402300799999
-- Ids: what src/job-options.ts accepts (at most 512 UTF-16 code units), as bytes: 3 per unit at most.
local MAX_ID_BYTES = 1536

-- An error reply holds one line: control characters of a caller's value become '?', and a long
-- value is cut, so the reason stays readable.
local function bad_arg(reason)
  return redis.error_reply('DELAYQ_BAD_ARG ' .. string.sub(string.gsub(reason, '%c', '?'), 1, 300))
end

-- A whole number written in plain decimal digits (no sign, fraction, exponent or spaces).
local function whole_ms(text)
  return type(text) == 'string' and string.match(text, '^%d+$') ~= nil
end

local function check_id(id)
  if type(id) ~= 'string' or #id == 0 then return 'id is empty' end
  if #id > MAX_ID_BYTES then return 'id is longer than ' .. MAX_ID_BYTES .. ' bytes' end
  if string.find(id, '%c') then return 'id contains a control character' end
  return nil
end

-- kind 'd': value is a delay in ms from now; 'a': value is an absolute epoch ms. Returns the due
-- time, or nil and the reason.
local function check_when(kind, value, now)
  if kind ~= 'd' and kind ~= 'a' then
    return nil, 'when-kind ' .. tostring(kind) .. ' is not d (delay ms) or a (epoch ms)'
  end
  local what = kind == 'd' and 'delay' or 'due time'
  if not whole_ms(value) then
    return nil, what .. ' ' .. tostring(value) .. ' is not a whole number of ms >= 0 (digits only)'
  end
  -- More than 15 digits is past 9999 either way, and might not be exact in a Lua double.
  if #value > 15 then return nil, what .. ' ' .. value .. ' puts the job after 9999-12-31' end
  local due = tonumber(value)
  if kind == 'd' then due = now + due end
  if due < MIN_DUE_MS then
    return nil, 'due time ' .. value .. ' is before 2000-01-01 (946684800000); epoch seconds instead of ms?'
  end
  if due > MAX_DUE_MS then
    return nil, what .. ' ' .. value .. ' puts the job after 9999-12-31'
  end
  return due, nil
end

local function whole_number(x, min)
  return type(x) == 'number' and x == math.floor(x) and x >= min and x <= 9007199254740991
end

local function check_backoff(b)
  if type(b) ~= 'table' then return 'backoff b is not an object' end
  for key in pairs(b) do
    if key ~= 'type' and key ~= 'delay' and key ~= 'max' and key ~= 'jitter' then
      return 'backoff b has the unknown field ' .. tostring(key)
    end
  end
  if b.type ~= 'fixed' and b.type ~= 'exponential' then
    return 'backoff b.type is not fixed or exponential'
  end
  if type(b.delay) ~= 'number' or b.delay < 0 then return 'backoff b.delay is not a number >= 0' end
  if b.max ~= nil and (b.type ~= 'exponential' or type(b.max) ~= 'number' or b.max < 0) then
    return 'backoff b.max is not a number >= 0 of an exponential backoff'
  end
  if b.jitter ~= nil and type(b.jitter) ~= 'boolean' then return 'backoff b.jitter is not a boolean' end
  return nil
end

-- The meta a producer passes to add: {"a":0,"m":<max attempts>} with optional b (backoff) and o
-- (timeout ms). Returns the decoded table, or nil and the reason.
local function check_add_meta(text)
  local ok, meta = pcall(cjson.decode, text)
  if not ok or type(meta) ~= 'table' then return nil, 'meta is not a JSON object' end
  for key in pairs(meta) do
    if key ~= 'a' and key ~= 'm' and key ~= 'b' and key ~= 'o' then
      return nil, 'meta has the unknown field ' .. tostring(key) .. ' (a producer writes a, m, b, o)'
    end
  end
  if meta.a ~= 0 then return nil, 'meta a (attempts started) is not 0' end
  if not whole_number(meta.m, 1) then return nil, 'meta m (max attempts) is not a whole number >= 1' end
  if meta.o ~= nil and not whole_number(meta.o, 1) then
    return nil, 'meta o (timeout ms) is not a whole number >= 1'
  end
  if meta.b ~= nil then
    local reason = check_backoff(meta.b)
    if reason then return nil, 'meta ' .. reason end
  end
  return meta, nil
end

-- An events cap: a whole number, negative for "failures only" (events.lua).
local function check_events_cap(text)
  if type(text) ~= 'string' or #text > 16 or not string.match(text, '^%-?%d+$') then
    return 'events cap ' .. tostring(text) .. ' is not a whole number'
  end
  return nil
end
