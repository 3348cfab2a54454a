-- Helpers of the schedule-*.lua scripts. Needs record.lua (rec_parse), place.lua
-- (unplace_waiting) and, for a wheel queue, wheel.lua.

-- The job id of schedule `name`'s occurrence due at `due` (epoch ms): "<name>@<due>".
-- src/schedule/occurrence.ts builds the same string; the two must agree.
local function occurrence_id(name, due)
  return name .. '@' .. string.format('%.0f', due)
end

-- Take back a waiting occurrence that has never started (no attempt charged), so a changed or
-- removed schedule does not run its old definition once more. A job that started, failed and
-- waits for its retry is left alone, as is a running, dead, completed or cancelled one (none of
-- them is in a waiting set). Returns true when removed. The caller has checked wheel_missing
-- for `id` (wheel strategy).
local function remove_unstarted(K, id)
  local rec = redis.call('HGET', K.j, id)
  local h = rec and rec_parse(rec)
  if not h or h.completed or h.cancelled or h.attempts ~= 0 then return false end
  if not unplace_waiting(K, id, h) then return false end
  redis.call('HDEL', K.j, id)
  if h.has_error then redis.call('HDEL', K.e, id) end
  return true
end

-- Occurrences are written where the caller's layout keeps waiting jobs (the class sets, or the
-- wheel when K.wi is set). When the queue's recorded layout is another one, its workers would
-- never claim them: refuse, writing nothing, as config.lua does. K.config is the queue's config
-- record (a HASH; its 'layout' field absent: zset).
local function assert_layout(K)
  local stored = redis.call('HGET', K.config, 'layout')
  local mine = K.wi and ('wheel:' .. string.format('%.0f', K.wg)) or 'zset'
  if stored and stored ~= mine then return redis.error_reply('DELAYQ_LAYOUT_MISMATCH ' .. stored) end
  return nil
end
