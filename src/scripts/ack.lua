-- ack: jobs finished; remove them (or keep them in the completed set when retention asks).
-- One call acks a batch: a worker sends every ack that piled up while its last call was in
-- flight, so a busy worker pays one round trip for many jobs and an idle one waits for none.
--
-- KEYS[1] jobs       HASH id -> envelope
-- KEYS[2] meta       HASH id -> bookkeeping
-- KEYS[3] active     ZSET id -> lease deadline ms
-- KEYS[4] leases     HASH id -> "token|startMs|workerId"
-- KEYS[5] errors     HASH id -> last error
-- KEYS[6] completed  ZSET id -> finished at ms (only used when retention keeps jobs)
-- KEYS[7] events     STREAM of job events
-- KEYS[8] done       ZSET id -> completed at ms: ids of recently completed jobs
-- KEYS[9] progress   HASH id -> the running job's last progress value (deleted here)
-- ARGV[1] keep completed: max count (0 = keep none), ARGV[2] keep completed: max age ms (0 = no
-- age limit), ARGV[3] events cap, ARGV[4] remember ids: max count (0 = none), ARGV[5] remember
-- ids: max age ms, then 3 per job: id, token, the lease deadline the caller was last told
-- Returns: per job, 'OK'; or 'ALREADY' when this ack was already applied (a client resent it
--          after a lost reply); or 'LOST <why>', and nothing is changed for that job.
-- Guarantee (fencing): only the holder of a valid lease can complete a job.
-- Why `done`: ioredis resends a command whose reply a dropped connection took. When that command
-- was an add whose job has run and completed in the meantime, add.lua finds the id here and writes
-- nothing, instead of running the job a second time. The set is trimmed to the last ARGV[4] ids,
-- none older than ARGV[5] ms, once per call that completed something.

--!include prelude.lua
--!include events.lua
--!include lease-check.lua

local K = {
  jobs = KEYS[1], meta = KEYS[2], active = KEYS[3], leases = KEYS[4], errors = KEYS[5], completed = KEYS[6],
  events = KEYS[7], events_cap = tonumber(ARGV[3]), done = KEYS[8], progress = KEYS[9],
}
local keep_count, keep_age_ms = tonumber(ARGV[1]), tonumber(ARGV[2])
local remember_count, remember_age_ms = tonumber(ARGV[4]), tonumber(ARGV[5])
local now = now_ms()
local results = {}
-- The ids this call applies, in order. Their removal is one command per key for the whole batch
-- (after the loop), not five per job: a batch of 50 acks costs about 3 commands per job, not 9.
local acked = {}
local started_at = {}
local applied = {}

for i = 6, #ARGV, 3 do
  local id, token, known_deadline = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  if applied[id] then
    -- The same id twice in one batch (a resent ack): answered as if the first had been removed
    -- already, which is what a call per ack would have found.
    results[#results + 1] = known_deadline > now and 'ALREADY' or 'LOST not held'
  else
    local lost, lease = check_lease(K, id, token, now)
    if lost then
      -- While our lease is still valid by the deadline we were told, nobody else can have
      -- claimed the job; if it is gone or completed and unleased, the remover was this ack.
      if lost == 'not held' and known_deadline > now and not lease
        and (redis.call('HEXISTS', K.jobs, id) == 0 or redis.call('ZSCORE', K.completed, id)) then
        results[#results + 1] = 'ALREADY'
      else
        results[#results + 1] = 'LOST ' .. lost
      end
    else
      results[#results + 1] = 'OK'
      acked[#acked + 1] = id
      started_at[#started_at + 1] = tonumber(string.match(lease, '^[^|]*|(%d+)'))
      applied[id] = true
    end
  end
end

-- The first write of the call must be one that frees memory: over maxmemory (noeviction) Redis
-- refuses a script whose first write would grow the data, and a worker must be able to drain a
-- full queue. So the removals come first and the events after them.
if #acked > 0 then
  call_chunked('ZREM', K.active, acked, 1)
  call_chunked('HDEL', K.leases, acked, 1)
  call_chunked('HDEL', K.errors, acked, 1)
  call_chunked('HDEL', K.progress, acked, 1)
  local finished = nil
  if keep_count > 0 or remember_count > 0 then
    finished = {}
    for _, id in ipairs(acked) do
      finished[#finished + 1] = now
      finished[#finished + 1] = id
    end
  end
  if remember_count > 0 then call_chunked('ZADD', K.done, finished, 2) end
  if keep_count > 0 then
    call_chunked('ZADD', K.completed, finished, 2)
  else
    call_chunked('HDEL', K.jobs, acked, 1)
    call_chunked('HDEL', K.meta, acked, 1)
  end
end

for n, id in ipairs(acked) do
  emit(K, 'completed', id, 'at', now, 'runMs', now - started_at[n])
end

if remember_count > 0 and #acked > 0 then
  redis.call('ZREMRANGEBYSCORE', K.done, '-inf', '(' .. (now - remember_age_ms))
  local excess = redis.call('ZCARD', K.done) - remember_count
  if excess > 0 then redis.call('ZREMRANGEBYRANK', K.done, 0, excess - 1) end
end

-- Retention: trim the completed set once per batch that completed something, by age and then
-- by count. A call that applied nothing changes nothing.
if keep_count > 0 and #acked > 0 then
  local drop = {}
  if keep_age_ms > 0 then
    drop = redis.call('ZRANGEBYSCORE', K.completed, '-inf', '(' .. (now - keep_age_ms), 'LIMIT', 0, 1000)
  end
  local excess = redis.call('ZCARD', K.completed) - #drop - keep_count
  if excess > 0 then
    for _, old in ipairs(redis.call('ZRANGE', K.completed, #drop, #drop + math.min(excess, 1000) - 1)) do
      drop[#drop + 1] = old
    end
  end
  if #drop > 0 then
    redis.call('ZREM', K.completed, unpack(drop))
    redis.call('HDEL', K.jobs, unpack(drop))
    redis.call('HDEL', K.meta, unpack(drop))
  end
end
return results
