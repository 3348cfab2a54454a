-- schedule-read: what the schedulers and schedules() need to see, in one consistent snapshot.
--
-- KEYS[1] schedules          HASH name -> definition JSON
-- KEYS[2] schedule payloads  HASH name -> encoded payload template
-- KEYS[3] schedule last      ZSET name -> due time of the last occurrence added
-- ARGV[1] mode: 'due' (schedules whose last occurrence is due, so the next must be added),
--         'all', or 'one' (ARGV[2] = name)
-- ARGV[2] for 'due': at most this many; for 'one': the name
-- Returns: { now, head, n, then per schedule: name, last, definition, payload }; head is the
--          earliest high-water mark of all schedules (-1 when there are none). A schedule whose
--          definition is missing (being removed) is left out.
--          Error 'DELAYQ_BAD_ARG <reason>' for KEYS other than 3, a mode other than due, all or
--          one, a 'due' limit that is not 1..10000, a 'one' name as schedule-upsert takes it, or
--          a value more than the mode takes.
-- Reads only.

--!include prelude.lua
--!include args.lua
--!include schedule-args.lua

if #KEYS ~= 3 then return bad_arg('KEYS has ' .. #KEYS .. ' keys; schedule-read takes 3 (schedules, payloads, last)') end
local mode = ARGV[1]
local problem
if mode == 'due' then
  problem = check_whole(ARGV[2], 'ARGV[2] limit', 1, 10000) or check_arg_count(2, "schedule-read 'due'")
elseif mode == 'one' then
  problem = check_schedule_name(ARGV[2], 'ARGV[2] schedule name') or check_arg_count(2, "schedule-read 'one'")
elseif mode == 'all' then
  problem = check_arg_count(1, "schedule-read 'all'")
else
  problem = 'ARGV[1] mode ' .. tostring(mode) .. ' is not due, all or one'
end
if problem then return bad_arg(problem) end

local K = { schedules = KEYS[1], payloads = KEYS[2], last = KEYS[3] }
local now = now_ms()

local names
if mode == 'due' then
  names = redis.call('ZRANGEBYSCORE', K.last, '-inf', now, 'LIMIT', 0, tonumber(ARGV[2]))
elseif mode == 'one' then
  names = { ARGV[2] }
else
  names = redis.call('ZRANGE', K.last, 0, -1)
end

local out = {}
local n = 0
for _, name in ipairs(names) do
  local last = redis.call('ZSCORE', K.last, name)
  local definition = redis.call('HGET', K.schedules, name)
  local payload = redis.call('HGET', K.payloads, name)
  if last and definition and payload then
    out[#out + 1] = name
    out[#out + 1] = last
    out[#out + 1] = definition
    out[#out + 1] = payload
    n = n + 1
  end
end

local head = redis.call('ZRANGE', K.last, 0, 0, 'WITHSCORES')
local result = { now, head[2] and tonumber(head[2]) or -1, n }
for _, v in ipairs(out) do result[#result + 1] = v end
return result
