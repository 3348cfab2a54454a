-- add.lua, the wake a call owes (steps 3 to 5): sleeping workers hear of a job that became the
-- earliest of where it went (one PUBLISH w per call, at the earliest such due time), and on the
-- wheel of the earliest new bucket (wheel_announce).
--
-- Inputs:  done (add.lua): wake_at and bucket_end, nil until a step sets them; created.
-- Outputs: add_wake and add_placed set them; add_announce writes what the call owes: the `added`
--          counter, the wake message, the wheel's announce.
-- Cost:    per call at most one HINCRBY n, one PUBLISH w and the wheel's announce.
-- Needs:   prelude.lua, wheel.lua.

-- Wake sleeping workers at `at` at the latest.
local function add_wake(done, at)
  if done.wake_at == nil or at < done.wake_at then done.wake_at = at end
end

-- What place_waiting returned for a job due at `due`: in the zset strategies true when the job
-- became the earliest of its set (wake at its due time, or now when it is due already); in the
-- wheel the end of a new bucket, announced once at the end if no bucket ends earlier (a job put
-- straight into ready wakes blocked workers by itself).
local function add_placed(call, done, at, due)
  if call.K.wi then
    if at and (done.bucket_end == nil or at < done.bucket_end) then done.bucket_end = at end
  elseif at then
    add_wake(done, math.max(due, call.now))
  end
end

local function add_announce(call, done)
  local K = call.K
  if done.created > 0 then redis.call('HINCRBY', K.n, 'added', done.created) end
  if done.wake_at ~= nil then redis.call('PUBLISH', K.w, ms_text(done.wake_at)) end
  if K.wi then wheel_announce(K, K.w, done.bucket_end) end
end
