-- config: record a queue's definition at its first use, or check a client's against the record.
-- Every client of a queue must agree on where waiting jobs live (layout), how many partitions it
-- has, how envelopes are encoded (codec) and how many events are kept: a job written under one
-- setting is lost, buried or unseen under another. One record, written once, decides.
--
-- KEYS[1] config      HASH the record: format, layout, partitions, codec, events, version
-- KEYS[2] layout      STRING legacy layout key of the queue's own tag ('zset' | 'wheel:<ms>')
-- KEYS[3] partitions  STRING legacy partition count key
-- KEYS[4] schedule    ZSET   } the queue's own tag's job sets: jobs waiting in one layout tell a
-- KEYS[5] ready       LIST   } queue used before layouts were recorded, and any job there tells
-- KEYS[6] wheel       ZSET   } a queue used unpartitioned (every job is in one of them)
-- KEYS[7] active      ZSET   }
-- KEYS[8] dead        ZSET   }
-- ARGV[1] mode: 'write' (record what is missing) or 'read' (never write: views such as the CLI)
-- ARGV[2] format: the job data layout version this client reads and writes
-- ARGV[3..10] per field, in the order partitions, layout, codec, events: the value this client
--         uses ('' = adopt the recorded one), then the value to record when none is
-- ARGV[11] the payload version this client writes or knows ('' = none); the record keeps the
--         highest seen (clients of several versions may run at once: that is what upgrades are)
-- Returns: { found (1 or 0: read mode and nothing recorded nor used), now, field, value, ... }
--          or error 'DELAYQ_CONFIG_MISMATCH <field> <recorded value>' when a value the client
--          uses differs from the recorded one; nothing is written then.
-- Legacy: with no record but the older layout/partitions keys (or jobs), the record is built
-- from them (and, in write mode, written); the legacy keys are left as they were.

--!include prelude.lua

local mode, format = ARGV[1], ARGV[2]
local fields = { 'partitions', 'layout', 'codec', 'events' }
local record = {}
-- HGETALL rather than EXISTS first: the ACL rules of docs/SECURITY.md grant the one command.
local stored_flat = redis.call('HGETALL', KEYS[1])
local found = #stored_flat > 0

if found then
  for i = 1, #stored_flat, 2 do record[stored_flat[i]] = stored_flat[i + 1] end
else
  local old_layout = redis.call('GET', KEYS[2])
  local old_partitions = redis.call('GET', KEYS[3])
  if old_layout or old_partitions then
    found = true
    -- A partitioned queue could only use the schedule ZSET (the wheel is refused with partitions).
    record.layout = old_layout or 'zset'
    record.partitions = old_partitions or '1'
    record.format = '1'
  else
    -- A queue used before layouts were recorded: its jobs say which layout it has, and that it is
    -- unpartitioned (a partitioned queue's jobs live under the partitions' tags, not this one).
    local has_zset = redis.call('ZCARD', KEYS[4]) > 0
    local has_wheel = redis.call('LLEN', KEYS[5]) > 0 or redis.call('ZCARD', KEYS[6]) > 0
    local used = has_zset or has_wheel or redis.call('ZCARD', KEYS[7]) > 0 or redis.call('ZCARD', KEYS[8]) > 0
    if used then
      found = true
      record.partitions = '1'
      record.format = '1'
      local wanted = ARGV[5]
      if has_wheel and not has_zset then
        -- The granularity is not known from the jobs: a wheel client's own, a zset client refused.
        if wanted == 'zset' then record.layout = 'wheel' elseif wanted ~= '' then record.layout = wanted end
      elseif has_zset and not has_wheel then
        record.layout = 'zset'
      end
    end
  end
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
    if wanted ~= '' and wanted ~= stored then
      return redis.error_reply('DELAYQ_CONFIG_MISMATCH ' .. field .. ' ' .. stored)
    end
  else
    missing = true
    if wanted ~= '' then record[field] = wanted else record[field] = default end
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
