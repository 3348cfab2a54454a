-- Helpers of the schedule-*.lua scripts. Needs prelude.lua (read_meta).

-- The job id of schedule `name`'s occurrence due at `due` (epoch ms): "<name>@<due>".
-- src/schedule/occurrence.ts builds the same string; the two must agree.
local function occurrence_id(name, due)
  return name .. '@' .. string.format('%.0f', due)
end

-- Take back a waiting occurrence that has never started (no attempt charged), so a changed or
-- removed schedule does not run its old definition once more. A job that started, failed and
-- waits for its retry is left alone. Returns true when removed.
local function remove_unstarted(K, id)
  if not redis.call('ZSCORE', K.schedule, id) then return false end
  local meta = read_meta(K.meta, id)
  if meta and meta.a ~= 0 then return false end
  redis.call('ZREM', K.schedule, id)
  redis.call('HDEL', K.jobs, id)
  redis.call('HDEL', K.meta, id)
  return true
end

-- Occurrences are written as add.lua writes jobs in the zset layout (add-job.lua). A queue whose
-- recorded layout is another one (a time wheel) would never claim them: refuse, writing nothing.
local function assert_zset_layout(layout_key)
  local layout = redis.call('GET', layout_key)
  if layout and layout ~= 'zset' then
    return redis.error_reply(
      'DELAYQ_SCHEDULE_LAYOUT repeating schedules need the zset layout, but this queue uses ' .. layout ..
      '; keep schedules on a queue of strategy zpopmin or range')
  end
  return nil
end
