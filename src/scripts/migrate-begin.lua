-- migrate-begin: mark a layout-1 queue (delayq 0.1) as being converted to layout 2 by
-- `delayq migrate` (docs/ARCHITECTURE.md §10). From this mark on, every layout-2 client is
-- refused (config.lua: DELAYQ_MIGRATING) until migrate-end.lua records format 2.
--
-- KEYS[1] config  HASH the queue's config record, in the queue's own tag
-- ARGV[1] who: host and process of the migrating command, shown by the refusal other clients get
-- ARGV[2] resume: '1' takes over a migration that stopped (its mark is still set), '0' refuses it
-- ARGV[3] layout, ARGV[4] partitions, ARGV[5] codec, ARGV[6] events: recorded only where the
--         record lacks them (a queue from before the config record: the caller read its legacy
--         layout and partitions keys)
-- Returns: { 'begun', now, mark } or { 'resumed', now, mark } (mark = "<since ms>|<who>", what
--          migrate-end must be given); { 'done', now } when the queue is in layout 2 already
--          (nothing written).
--          Errors, nothing written: 'DELAYQ_MIGRATING <since>|<who>' when a migration is marked
--          and resume is not '1'; 'DELAYQ_CONFIG_MISMATCH format <f>' for a format neither 1 nor 2;
--          'DELAYQ_BAD_ARG <reason>' for KEYS other than one HASH, a who that is empty, over 1024
--          bytes, with a control character or not UTF-8, a resume other than 0 or 1, a layout,
--          partitions, codec or events not of the config record's form (config-fields.lua), or
--          ARGV other than these 6 values.
-- Guarantee: at most one migration holds the mark; taking it and reading the format are one step.

--!include prelude.lua
--!include args.lua
--!include config-fields.lua

local key_problem = check_key_count(1, false) or check_key_types('h', false)
if key_problem then return bad_arg(key_problem) end
local who = ARGV[1]
if type(who) ~= 'string' or #who == 0 or #who > 1024 or string.find(who, '%c') or utf8_problem(who) then
  return bad_arg('ARGV[1] who must be 1..1024 bytes of UTF-8 without control characters')
end
if ARGV[2] ~= '0' and ARGV[2] ~= '1' then return bad_arg('ARGV[2] resume ' .. tostring(ARGV[2]) .. ' is not 0 or 1') end
for i, field in ipairs({ 'layout', 'partitions', 'codec', 'events' }) do
  local value = ARGV[2 + i]
  if type(value) ~= 'string' then return bad_arg('ARGV[' .. (2 + i) .. '] ' .. field .. ' is missing') end
  local rule = field_problem(field, value)
  if rule then return bad_arg('ARGV[' .. (2 + i) .. '] ' .. field .. ' ' .. value .. ' is not ' .. rule) end
end
local count_problem = check_arg_count(6, 'migrate-begin')
if count_problem then return bad_arg(count_problem) end

local config = KEYS[1]
local resume = ARGV[2] == '1'
local now = now_ms()
local record = {}
local flat = redis.call('HGETALL', config)
for i = 1, #flat, 2 do record[flat[i]] = flat[i + 1] end

if record.format == '2' and not record.migrating then return { 'done', now } end
if record.format and record.format ~= '1' and record.format ~= '2' then
  return redis.error_reply('DELAYQ_CONFIG_MISMATCH format ' .. record.format)
end
local status = 'begun'
if record.migrating then
  if not resume then return redis.error_reply('DELAYQ_MIGRATING ' .. record.migrating) end
  status = 'resumed'
end

-- The original start stays: the refusal tells how long the queue has been out of service.
local since = record.migrating and string.match(record.migrating, '^(%d+)|') or tostring(now)
local mark = since .. '|' .. who
local writes = { 'migrating', mark }
local defaults = { format = '1', layout = ARGV[3], partitions = ARGV[4], codec = ARGV[5], events = ARGV[6] }
for field, value in pairs(defaults) do
  if not record[field] then
    writes[#writes + 1] = field
    writes[#writes + 1] = value
  end
end
redis.call('HSET', config, unpack(writes))
return { status, now, mark }
