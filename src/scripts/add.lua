-- add: accept N jobs into the schedule; an id that already exists is left untouched.
--
-- KEYS[1] schedule  ZSET id -> due ms
-- KEYS[2] jobs      HASH id -> envelope
-- KEYS[3] meta      HASH id -> bookkeeping (see prelude)
-- KEYS[4] wake      channel
-- KEYS[5] events    STREAM of job events
-- KEYS[6] done      ZSET id -> completed at ms: ids of recently completed jobs (see ack.lua)
-- KEYS[7...]        wheel layout only: ready, wheel, wheel count, then bucket lists (wheel.lua)
-- ARGV[1] N, then 5 per job: id, when-kind ('d' = delay ms from now, 'a' = absolute epoch ms),
--         when-value, envelope, meta (JSON: a = 0, m = max attempts, b = backoff or absent);
--         then: events cap (0 = no events); wheel layout only, after it: granularity ms and the
--         start of each bucket list passed in KEYS
-- Returns: { created_1, run_at_1, created_2, run_at_2, ... }; created is 1, or 0 when the id
--          existed (run_at is then the existing job's due time), or 2 when a job of that id
--          completed recently (run_at is then when it completed). The wheel layout appends now.
--          Wheel layout: error 'DELAYQ_WRONG_BUCKET <start>,...' (nothing written) when a job's
--          bucket was not passed. Error 'DELAYQ_BAD_ARG job <i> of <N>: <reason>' (nothing written)
--          when an argument is malformed (includes/args.lua): an id empty, over 1536 bytes or with a
--          control character; a when-value not plain digits, or a due time outside
--          [2000-01-01, 9999-12-31]; an empty envelope; meta not {a = 0, m >= 1, b?, o? >= 1}.
-- Guarantee: all N jobs are checked and written in one atomic step; the due time of a
--          delayed job is counted from the server's clock. An add that ioredis resends after a
--          lost reply finds the job it wrote, or, if that job already ran, its id in `done`: it
--          never writes the job a second time.

--!include prelude.lua
--!include events.lua
--!include wheel.lua
--!include args.lua

if not string.match(ARGV[1] or '', '^[1-9]%d?%d?%d?%d?%d?$') then
  return bad_arg('N ' .. tostring(ARGV[1]) .. ' is not a whole number of jobs from 1 to 999999')
end
local n = tonumber(ARGV[1])
if #ARGV < 2 + n * 5 then
  return bad_arg('ARGV has ' .. #ARGV .. ' values; N = ' .. n .. ' jobs need ' .. (2 + n * 5))
end
local cap_problem = check_events_cap(ARGV[2 + n * 5])
if cap_problem then return bad_arg(cap_problem) end
local K = {
  schedule = KEYS[1], jobs = KEYS[2], meta = KEYS[3], wake = KEYS[4], events = KEYS[5], done = KEYS[6],
  events_cap = tonumber(ARGV[2 + n * 5]),
}
wheel_keys(K, 7, 3 + n * 5)
local now = now_ms()
local result = {}
local earliest = nil

-- Every job is checked before anything is written: one bad job refuses the whole call.
local dues, metas = {}, {}
for i = 0, n - 1 do
  local base = 2 + i * 5
  local problem = check_id(ARGV[base])
  local run_at, meta
  if not problem then run_at, problem = check_when(ARGV[base + 1], ARGV[base + 2], now) end
  if not problem and #ARGV[base + 3] == 0 then problem = 'envelope is empty' end
  if not problem then meta, problem = check_add_meta(ARGV[base + 4]) end
  if problem then return bad_arg('job ' .. (i + 1) .. ' of ' .. n .. ': ' .. problem) end
  dues[i + 1] = run_at
  metas[i + 1] = meta
end
local missing = missing_buckets(K, dues, {}, now)
if missing then return missing end

-- The meta entries, and in the zset layout the schedule entries, of the jobs written: one HSET
-- and one ZADD for the batch after the loop, not one of each per job.
local meta_args, schedule_args = {}, {}
-- id -> due time of the jobs this call wrote, for an id that comes twice in one batch.
local written = {}
for i = 0, n - 1 do
  local base = 2 + i * 5
  local id = ARGV[base]
  local run_at = dues[i + 1]
  local done_at = redis.call('ZSCORE', K.done, id)
  if done_at then
    result[#result + 1] = 2
    result[#result + 1] = tonumber(done_at)
  elseif redis.call('HSETNX', K.jobs, id, ARGV[base + 3]) == 1 then
    local meta = metas[i + 1]
    meta.r = run_at
    meta_args[#meta_args + 1] = id
    meta_args[#meta_args + 1] = cjson.encode(meta)
    written[id] = run_at
    local at = run_at
    if K.wheel then
      at = place(K, id, run_at, now)
    else
      -- What place() does in the zset layout, deferred to one ZADD for the batch.
      schedule_args[#schedule_args + 1] = run_at
      schedule_args[#schedule_args + 1] = id
    end
    result[#result + 1] = 1
    result[#result + 1] = run_at
    if at ~= nil and (earliest == nil or at < earliest) then earliest = at end
    emit(K, 'added', id, 'runAt', run_at, 'at', now)
  else
    local existing = written[id]
    if existing == nil then
      local meta = read_meta(K.meta, id)
      existing = meta and meta.r or -1
    end
    result[#result + 1] = 0
    result[#result + 1] = existing
  end
end
call_chunked('HSET', K.meta, meta_args, 2)
call_chunked('ZADD', K.schedule, schedule_args, 2)

announce(K, earliest)
if K.wheel then result[#result + 1] = now end
return result
