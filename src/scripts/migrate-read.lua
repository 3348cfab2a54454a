-- migrate-read: read one chunk of a layout-1 partition for `delayq migrate` (docs/ARCHITECTURE.md
-- §10): every id with all that layout 1 knows of it, for the caller to build its layout-2 record.
-- Reads only; migrate-write.lua writes, compare-and-set against what this returned.
--
-- KEYS[1] schedule   ZSET id -> due ms (layout 1: waiting jobs)
-- KEYS[2] jobs       HASH id -> v1 envelope
-- KEYS[3] meta       HASH id -> bookkeeping JSON {a, m, r, b?, o?, t?}
-- KEYS[4] active     ZSET id -> lease deadline ms
-- KEYS[5] leases     HASH id -> "token|startMs|workerId"
-- KEYS[6] dead       ZSET id -> died at ms
-- KEYS[7] errors     HASH id -> last error JSON
-- KEYS[8] completed  ZSET id -> completed at ms (kept completed jobs: their data is in jobs)
-- KEYS[9] done       ZSET id -> completed at ms (ids only)
-- KEYS[10] cancelled ZSET id -> cancelled at ms (`x`: the same key in both layouts)
-- KEYS[11] records   HASH id -> layout-2 record (`j`)
-- ARGV[1] phase: where the ids come from: active, dead, completed, schedule, done, cancelled (by
--         rank in that ZSET), or jobs (HSCAN of the jobs hash: jobs in no set)
-- ARGV[2] cursor: the rank to read from (a migration passes 0: it drains each set as it goes; a
--         dry run passes the cursor it was given), or for jobs the HSCAN cursor
-- ARGV[3] chunk: ids to read at most (HSCAN's COUNT for jobs, so it may return more or fewer)
-- Returns: { next cursor ('0': the phase has no more after this chunk), n, then 12 per id:
--          id, envelope, meta, lease, error, due, deadline, died, completed, done, cancelled,
--          has record (1/0) } with false for what layout 1 does not have of the id
-- Cost: O(chunk × log n).
--          Error 'DELAYQ_BAD_ARG <reason>' for KEYS other than these 11, a phase not above, a
--          cursor that is not a whole number (a rank, or HSCAN's cursor), a chunk not 1..10000, or
--          ARGV other than these 3 values.
-- Guarantee: writes nothing; what it returns of one id is one consistent snapshot (one script), so
--          migrate-write's compare-and-set against it tells whether the job moved since.

--!include args.lua

local PHASES = { active = true, dead = true, completed = true, schedule = true, jobs = true, done = true, cancelled = true }
local problem = check_key_count(11, false)
  or not PHASES[ARGV[1] or ''] and 'ARGV[1] phase ' .. tostring(ARGV[1]) .. ' is not active, dead, completed, schedule, jobs, done or cancelled'
  or (type(ARGV[2]) ~= 'string' or not string.find(ARGV[2], '^%d+$') or #ARGV[2] > 20)
    and 'ARGV[2] cursor ' .. tostring(ARGV[2]) .. ' is not a whole number (digits only)'
  or check_whole(ARGV[3], 'ARGV[3] chunk', 1, 10000)
  or check_arg_count(3, 'migrate-read')
if problem then return bad_arg(problem) end
local phase, cursor, chunk = ARGV[1], ARGV[2], tonumber(ARGV[3])
local sets = { active = KEYS[4], dead = KEYS[6], completed = KEYS[8], schedule = KEYS[1], done = KEYS[9],
  cancelled = KEYS[10] }
local ids, next_cursor
if phase == 'jobs' then
  local scan = redis.call('HSCAN', KEYS[2], cursor, 'COUNT', chunk)
  next_cursor = scan[1]
  ids = {}
  for i = 1, #scan[2], 2 do ids[#ids + 1] = scan[2][i] end
else
  if #cursor > 15 then return bad_arg('ARGV[2] cursor ' .. cursor .. ' is not a rank (at most 15 digits)') end
  local from = tonumber(cursor)
  ids = redis.call('ZRANGE', sets[phase], from, from + chunk - 1)
  next_cursor = #ids < chunk and '0' or tostring(from + #ids)
end

local out = { next_cursor, #ids }
if #ids == 0 then return out end
local envelopes = redis.call('HMGET', KEYS[2], unpack(ids))
local metas = redis.call('HMGET', KEYS[3], unpack(ids))
local leases = redis.call('HMGET', KEYS[5], unpack(ids))
local errors = redis.call('HMGET', KEYS[7], unpack(ids))
for i, id in ipairs(ids) do
  out[#out + 1] = id
  out[#out + 1] = envelopes[i]
  out[#out + 1] = metas[i]
  out[#out + 1] = leases[i]
  out[#out + 1] = errors[i]
  for _, key in ipairs({ KEYS[1], KEYS[4], KEYS[6], KEYS[8], KEYS[9], KEYS[10] }) do
    out[#out + 1] = redis.call('ZSCORE', key, id)
  end
  out[#out + 1] = redis.call('HEXISTS', KEYS[11], id)
end
return out
