-- Burial and the dead set's bounds, layout 2 (docs/ARCHITECTURE.md §3.1, §4.4).
-- A dead job keeps its full record in K.j (so dead.retry can put it back as it was) and has an
-- entry in K.d scored by when it died; its last error is in K.e. The caller has already taken
-- the job out of where it was (waiting set or lease) and written its error. Needs K.d, K.j, K.e,
-- K.n, and what emit needs (events.lua).

-- Trimming is bounded per call so one call never blocks Redis for long; the rest goes on the
-- next burial or on trim.lua's next run.
local TRIM_BATCH = 100

-- Forget dead jobs for good: their entry, record and last error.
local function drop_dead(K, ids)
  if #ids == 0 then return end
  redis.call('ZREM', K.d, unpack(ids))
  redis.call('HDEL', K.j, unpack(ids))
  redis.call('HDEL', K.e, unpack(ids))
end

-- Keep the dead set within `max_count` entries and `max_age_ms` (0: no bound), at most
-- TRIM_BATCH ids per bound and call. Returns how many were dropped.
local function trim_dead(K, now, max_count, max_age_ms)
  local dropped = 0
  if max_age_ms > 0 then
    local old = redis.call('ZRANGEBYSCORE', K.d, '-inf', '(' .. string.format('%.0f', now - max_age_ms),
      'LIMIT', 0, TRIM_BATCH)
    drop_dead(K, old)
    dropped = dropped + #old
  end
  if max_count > 0 then
    local excess = redis.call('ZCARD', K.d) - max_count
    if excess > 0 then
      local oldest = redis.call('ZRANGE', K.d, 0, math.min(excess, TRIM_BATCH) - 1)
      drop_dead(K, oldest)
      dropped = dropped + #oldest
    end
  end
  return dropped
end

-- Bury job `id` whose record is `rec` (already carrying the E flag): the record stays, the job
-- enters K.d at `now`, the `dead` counter and event are written (always: failures are never
-- opt-in), then the dead set is trimmed. `attempt` is the attempt number the event reports.
local function bury(K, id, rec, now, attempt, dead_max_count, dead_max_age_ms)
  redis.call('HSET', K.j, id, rec)
  redis.call('ZADD', K.d, now, id)
  redis.call('HINCRBY', K.n, 'dead', 1)
  emit(K, 'dead', id, 'attempt', attempt, 'at', now)
  trim_dead(K, now, dead_max_count, dead_max_age_ms)
end
