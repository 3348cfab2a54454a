-- config: record a queue's definition at its first use, or check a client's against the record.
-- Every client of a queue must agree on where waiting jobs live (layout), how many partitions it
-- has, how payloads are encoded (codec) and how many events are kept: a job written under one
-- setting is lost, buried or unseen under another. One record, written once, decides.
--
-- KEYS[1] config      HASH the record: format, layout, partitions, codec, events, version, and
--                     while `delayq migrate` runs, migrating ("<since ms>|<who>") and its cursor
-- KEYS[2..6] layout (STRING), partitions (STRING), schedule (ZSET), active (ZSET), dead (ZSET):
--             the layout-1 keys of the queue's own tag (src/redis/keys.ts legacyKeys), only read:
--             with no record, any of them tells a queue that delayq 0.1 used (before or without
--             its record); layout 2 never writes them
-- ARGV[1] mode: 'write' (record what is missing) or 'read' (never write: views such as the CLI)
-- ARGV[2] format: the job data layout version this client reads and writes
-- ARGV[3..10] per field, in the order partitions, layout, codec, events: the value this client
--         uses ('' = adopt the recorded one), then the value to record when none is
-- ARGV[11] the payload version this client writes or knows ('' = none); the record keeps the
--         highest seen (clients of several versions may run at once: that is what upgrades are)
-- ARGV[12] the group concurrency this client sets ('' = adopt the recorded one), ARGV[13] its
--         group rate limit ('<max>/<per ms>', 'none', or '' = adopt): recorded as
--         `groups.concurrency` and `groups.limit` by the first worker that sets them, so every
--         worker enforces one bound (the claim counts a group's running jobs against it). These
--         are live settings (src/definition/settings.ts): once recorded, only configure.lua
--         changes them, and a client with another value adopts the recorded one (the reply
--         carries it; the client warns), never a mismatch.
-- Returns: { found (1 or 0: read mode and nothing recorded nor used), now, field, value, ... }
--          or error 'DELAYQ_MIGRATING <since ms>|<who>' while `delayq migrate` converts the queue,
--          or error 'DELAYQ_CONFIG_MISMATCH <field> <recorded value>' when a value the client
--          uses differs from the recorded one (field `format` 1 also for a layout-1 queue without
--          a record; a partitions from the recorded `partitions.base` up to the recorded count is
--          no mismatch: the client adopts the recorded count); nothing is written then. Error 'DELAYQ_BAD_CONFIG <key> <field> <value> is
--          not <rule>' for a recorded value of the wrong form (`version abc`, `partitions 01`), and
--          'DELAYQ_BAD_ARG <reason>' for KEYS other than 6 or an argument of the wrong form
--          (mode, format, per field as the record holds it): nothing is written then either.
-- Guarantee: a client never writes into a queue of another format, nor one being migrated: the
--          check and the first write of the record are one step.

--!include prelude.lua
--!include args.lua
--!include config-fields.lua

local mode, format = ARGV[1], ARGV[2]
local fields = { 'partitions', 'layout', 'codec', 'events' }
if #KEYS ~= 6 then return bad_arg('KEYS has ' .. #KEYS .. ' keys; config takes 6 (config, then the layout-1 keys layout, partitions, schedule, active, dead)') end
if mode ~= 'write' and mode ~= 'read' then return bad_arg('ARGV[1] mode ' .. tostring(mode) .. " is not 'write' or 'read'") end
if #ARGV ~= 13 then return bad_arg('ARGV has ' .. #ARGV .. ' values; config takes 13') end
if field_problem('format', format) then return bad_arg('ARGV[2] format ' .. format .. ' is not ' .. field_problem('format', format)) end
for i, field in ipairs(fields) do
  for k = 1, 2 do
    local value = ARGV[k + 2 * i]
    if (value ~= '' or k == 2) and field_problem(field, value) then
      return bad_arg('ARGV[' .. (k + 2 * i) .. '] ' .. field .. ' ' .. value .. ' is not ' .. (k == 1 and "'' or " or '') .. field_problem(field, value))
    end
  end
end
for i, field in ipairs({ 'version', 'groups.concurrency', 'groups.limit' }) do
  local value = ARGV[10 + i]
  if value ~= '' and field_problem(field, value) then
    return bad_arg('ARGV[' .. (10 + i) .. '] ' .. field .. ' ' .. value .. " is not '' or " .. field_problem(field, value))
  end
end

local record = {}
-- HGETALL rather than EXISTS first: the ACL rules of docs/SECURITY.md grant the one command.
local stored_flat = redis.call('HGETALL', KEYS[1])
local found = #stored_flat > 0

if found then
  for i = 1, #stored_flat, 2 do record[stored_flat[i]] = stored_flat[i + 1] end
  if record.migrating then return redis.error_reply('DELAYQ_MIGRATING ' .. record.migrating) end
  -- A record someone edited by hand (or a client that wrote it wrong): refused, naming the field.
  for field, value in pairs(record) do
    local problem = field_problem(field, value)
    if problem then
      return redis.error_reply('DELAYQ_BAD_CONFIG ' .. KEYS[1] .. ' ' .. field .. ' ' .. string.gsub(value, '%c', '?') .. ' is not ' .. problem)
    end
  end
else
  -- No record: a queue delayq 0.1 used before it wrote records (or over maxmemory) still has
  -- its layout-1 keys. Its jobs are unreadable here; `delayq migrate` converts them.
  local legacy = redis.call('GET', KEYS[2]) or redis.call('GET', KEYS[3])
    or redis.call('ZCARD', KEYS[4]) > 0 or redis.call('ZCARD', KEYS[5]) > 0
    or redis.call('ZCARD', KEYS[6]) > 0
  if legacy then return redis.error_reply('DELAYQ_CONFIG_MISMATCH format 1') end
end

if not found and mode == 'read' then return { 0, now_ms() } end

if record.format and record.format ~= format then
  return redis.error_reply('DELAYQ_CONFIG_MISMATCH format ' .. record.format)
end
local missing = not record.format
record.format = format
for i, field in ipairs(fields) do
  local wanted, default = ARGV[1 + 2 * i], ARGV[2 + 2 * i]
  local stored = record[field]
  if stored then
    -- A re-partitioned queue (repartition.lua): a client opened with any count from the one
    -- before the first re-partition up to the recorded one follows the recorded one.
    local base = field == 'partitions' and tonumber(record['partitions.base'])
    local follows = base and wanted ~= '' and tonumber(wanted) >= base and tonumber(wanted) <= tonumber(stored)
    if wanted ~= '' and wanted ~= stored and not follows then
      return redis.error_reply('DELAYQ_CONFIG_MISMATCH ' .. field .. ' ' .. stored)
    end
  else
    missing = true
    if wanted ~= '' then record[field] = wanted else record[field] = default end
  end
end
-- Group bounds (live): no default is recorded; a client adopts what is recorded, whatever it set.
for i, field in ipairs({ 'groups.concurrency', 'groups.limit' }) do
  local wanted = ARGV[11 + i] or ''
  local stored = record[field]
  if not stored and wanted ~= '' then
    missing = true
    record[field] = wanted
  end
end
local version = tonumber(ARGV[11])
if version and (not record.version or version > tonumber(record.version)) then
  missing = true
  record.version = string.format('%d', version)
end

local reply = { 1, now_ms() }
local flat = {}
for field, value in pairs(record) do
  table.insert(reply, field)
  table.insert(reply, value)
  table.insert(flat, field)
  table.insert(flat, value)
end
-- pcall: over maxmemory Redis refuses the HSET, and a worker must still be able to start (and
-- drain a full queue). Unrecorded, the record is written by the next client that can.
if missing and mode == 'write' then redis.pcall('HSET', KEYS[1], unpack(flat)) end
return reply
