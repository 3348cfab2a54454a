-- bury(K, id, now, dead_max_count, dead_max_age_ms): move a job (already out of
-- schedule and active) into the dead set, then trim the dead set by age and count.
-- The caller has written the job's last error into K.errors. Needs K.dead, K.jobs,
-- K.meta, K.errors, and what emit needs (events.lua).

-- Trimming is bounded per call so one call never blocks Redis for long; the rest
-- goes on the next bury.
local TRIM_BATCH = 100

local function drop_dead(K, ids)
  if #ids == 0 then return end
  redis.call('ZREM', K.dead, unpack(ids))
  redis.call('HDEL', K.jobs, unpack(ids))
  redis.call('HDEL', K.meta, unpack(ids))
  redis.call('HDEL', K.errors, unpack(ids))
end

local function bury(K, id, now, dead_max_count, dead_max_age_ms)
  redis.call('ZADD', K.dead, now, id)
  emit(K, 'dead', id, 'at', now)
  if dead_max_age_ms > 0 then
    drop_dead(K, redis.call('ZRANGEBYSCORE', K.dead, '-inf', '(' .. (now - dead_max_age_ms), 'LIMIT', 0, TRIM_BATCH))
  end
  if dead_max_count > 0 then
    local excess = redis.call('ZCARD', K.dead) - dead_max_count
    if excess > 0 then
      drop_dead(K, redis.call('ZRANGE', K.dead, 0, math.min(excess, TRIM_BATCH) - 1))
    end
  end
end
