-- add: accept N jobs into the schedule; an id that already exists is left untouched.
--
-- KEYS[1] schedule  ZSET id -> due ms
-- KEYS[2] jobs      HASH id -> envelope
-- KEYS[3] meta      HASH id -> bookkeeping (see prelude)
-- KEYS[4] wake      channel
-- KEYS[5] events    STREAM of job events
-- KEYS[6] done      ZSET id -> completed at ms: ids of recently completed jobs (see ack.lua)
-- KEYS[7...]        wheel layout only: ready, wheel, wheel count, then bucket lists (wheel.lua)
-- KEYS[after those] replace mode only: active, dead, completed (ZSETs), to tell a waiting job from
--                   a running, dead or kept completed one
-- ARGV[1] N, then 5 per job: id, when-kind, when-value, envelope, meta (JSON: a = 0,
--         m = max attempts, b = backoff or absent, o = timeout ms or absent); when-kind is 'd'
--         (delay ms from now) or 'a' (absolute epoch ms), optionally followed by the mode: 'k'
--         (keep an existing job, the default: 'd' = 'dk') or 'r' (replace a waiting one, issue 15
--         debounce; the call must then pass the replace KEYS); then: events cap (0 = no events);
--         wheel layout only, after it: granularity ms and the start of each bucket list in KEYS
-- Returns: { code_1, time_1, code_2, time_2, ... }; code 1 created (time = due); 0 the id
--          existed and was kept (its due time, -1 if unknown); 2 a job of that id completed
--          recently, the `done` set (when it completed); replace mode only: 3 replaced (new due
--          time), 4 running (lease deadline), 5 dead (when it died), 6 completed and kept (when).
--          Codes 2, 4, 5, 6 wrote nothing. The wheel layout appends now.
--          Wheel layout: error 'DELAYQ_WRONG_BUCKET <start>,...' (nothing written) when a job's
--          new bucket, or the bucket a replaced job waits in, was not passed. Error
--          'DELAYQ_BAD_ARG job <i> of <N>: <reason>' (nothing written) when an argument is
--          malformed (includes/args.lua): an id empty, over 1536 bytes or with a control
--          character; a when-kind or mode unknown, or 'r' without the replace KEYS; a when-value
--          not plain digits, or a due time outside [2000-01-01, 9999-12-31]; an empty envelope;
--          meta not {a = 0, m >= 1, b?, o? >= 1}.
-- Cost: per new job O(log n) (zset) or O(1) (wheel); per replace O(log n) (zset), or in the wheel
--          O(length of the job's bucket, or of ready) for the LREM, as cancel and reschedule.
-- Guarantee: all N jobs are checked and written in one atomic step; the due time of a
--          delayed job is counted from the server's clock. An add that ioredis resends after a
--          lost reply finds the job it wrote, or, if that job already ran, its id in `done`: it
--          never writes the job a second time. A replace resent the same way writes the same
--          job again: the same payload and options, the due time counted from the later now.
--          A replace keeps the attempts a waiting job has used and its last error (a retry stays
--          a retry).

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
-- The wheel tail, when present, is granularity + one start per bucket in ARGV and ready, wheel,
-- wheel count + one list per bucket in KEYS; the replace KEYS come after it.
local replace_keys = 7
if #ARGV > 2 + n * 5 then
  local buckets = #ARGV - (3 + n * 5)
  wheel_keys(K, 7, 3 + n * 5, 9 + buckets)
  replace_keys = 10 + buckets
end
K.active, K.dead, K.completed = KEYS[replace_keys], KEYS[replace_keys + 1], KEYS[replace_keys + 2]
local now = now_ms()
local result = {}
local earliest = nil

-- Every job is checked before anything is written: one bad job refuses the whole call.
local dues, metas, replaces, removals = {}, {}, {}, {}
for i = 0, n - 1 do
  local base = 2 + i * 5
  local problem = check_id(ARGV[base])
  local run_at, meta
  local kind, mode = string.sub(ARGV[base + 1], 1, 1), string.sub(ARGV[base + 1], 2)
  if not problem then run_at, problem = check_when(kind, ARGV[base + 2], now) end
  if not problem and mode ~= '' and mode ~= 'k' and mode ~= 'r' then
    problem = 'mode ' .. mode .. ' of when-kind ' .. ARGV[base + 1] .. ' is not k (keep) or r (replace)'
  end
  if not problem and mode == 'r' and not K.completed then
    problem = 'mode r (replace) needs the KEYS active, dead, completed after the others'
  end
  if not problem and #ARGV[base + 3] == 0 then problem = 'envelope is empty' end
  if not problem then meta, problem = check_add_meta(ARGV[base + 4]) end
  if problem then return bad_arg('job ' .. (i + 1) .. ' of ' .. n .. ': ' .. problem) end
  dues[i + 1] = run_at
  metas[i + 1] = meta
  replaces[i + 1] = mode == 'r'
  -- A job replaced moves out of its bucket: that bucket is needed too.
  if mode == 'r' and K.wheel and is_waiting(K, ARGV[base]) then
    local old = read_meta(K.meta, ARGV[base])
    if old and old.r then removals[#removals + 1] = old.r end
  end
end
local missing = missing_buckets(K, dues, removals, now)
if missing then return missing end

-- The meta entries, and in the zset layout the schedule entries, of the jobs written: one HSET
-- and one ZADD for the batch after the loop, not one of each per job.
local meta_args, schedule_args = {}, {}
-- id -> due time of the jobs this call wrote, for an id that comes twice in one batch.
local written = {}

-- Write the deferred entries now: a replace that follows reads and rewrites them.
local function flush()
  call_chunked('HSET', K.meta, meta_args, 2)
  call_chunked('ZADD', K.schedule, schedule_args, 2)
  meta_args, schedule_args = {}, {}
end

-- Replace waiting job `id` by the new envelope, meta and due time. Returns the time to announce
-- (see place), or false when the job is not waiting (nothing written).
local function replace(id, run_at, envelope, meta)
  flush()
  if not is_waiting(K, id) then return false end
  local old = read_meta(K.meta, id)
  if not unplace(K, id, old) then return false end
  redis.call('HSET', K.jobs, id, envelope)
  meta.a = old and old.a or 0
  meta.t = old and old.t or nil
  meta.r = run_at
  write_meta(K.meta, id, meta)
  return place(K, id, run_at, now)
end

-- The state of job `id`, which exists and is not waiting: code and time (see Returns).
local function state_of(id)
  for _, entry in ipairs({ { K.active, 4 }, { K.dead, 5 }, { K.completed, 6 } }) do
    local at = redis.call('ZSCORE', entry[1], id)
    if at then return entry[2], tonumber(at) end
  end
  local meta = read_meta(K.meta, id)
  return 0, meta and meta.r or -1
end

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
  elseif replaces[i + 1] then
    local at = replace(id, run_at, ARGV[base + 3], metas[i + 1])
    if at == false then
      local code, time = state_of(id)
      result[#result + 1] = code
      result[#result + 1] = time
    else
      written[id] = run_at
      result[#result + 1] = 3
      result[#result + 1] = run_at
      if at ~= nil and (earliest == nil or at < earliest) then earliest = at end
      emit(K, 'replaced', id, 'runAt', run_at, 'at', now)
    end
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
