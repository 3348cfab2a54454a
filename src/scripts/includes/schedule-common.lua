-- Helpers of the schedule-*.lua scripts. Needs prelude.lua (read_meta) and wheel.lua (is_waiting,
-- unplace).

-- The job id of schedule `name`'s occurrence due at `due` (epoch ms): "<name>@<due>".
-- src/schedule/occurrence.ts builds the same string; the two must agree.
local function occurrence_id(name, due)
  return name .. '@' .. string.format('%.0f', due)
end

-- Take back a waiting occurrence that has never started (no attempt charged), so a changed or
-- removed schedule does not run its old definition once more. A job that started, failed and
-- waits for its retry is left alone. Returns true when removed. The caller has checked
-- missing_buckets for the occurrence's due time (wheel layout).
local function remove_unstarted(K, id)
  if not is_waiting(K, id) then return false end
  local meta = read_meta(K.meta, id)
  if meta and meta.a ~= 0 then return false end
  if not unplace(K, id, meta) then return false end
  redis.call('HDEL', K.jobs, id)
  redis.call('HDEL', K.meta, id)
  return true
end

-- Occurrences are written where the caller's layout keeps waiting jobs (the schedule ZSET, or
-- the wheel when K.wheel is set). When the queue's recorded layout is another one, its workers
-- would never claim them: refuse, writing nothing, as config.lua does. K.config is the queue's
-- config record (a HASH; its 'layout' field absent: zset).
local function assert_layout(K)
  local stored = redis.call('HGET', K.config, 'layout')
  local mine = K.wheel and ('wheel:' .. string.format('%.0f', K.granularity)) or 'zset'
  if stored and stored ~= mine then return redis.error_reply('DELAYQ_LAYOUT_MISMATCH ' .. stored) end
  return nil
end
