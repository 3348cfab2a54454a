-- cancel: remove a job that is still waiting in the schedule.
--
-- KEYS[1] schedule, KEYS[2] jobs, KEYS[3] meta, KEYS[4] errors, KEYS[5] events
-- ARGV[1] id, ARGV[2] events cap
-- Returns: 1 when cancelled; 0 when the job is not scheduled (unknown, running, dead).
-- Guarantee: a job being run is never cancelled under its worker's feet.

--!include prelude.lua
--!include events.lua

local K = {
  schedule = KEYS[1], jobs = KEYS[2], meta = KEYS[3], errors = KEYS[4], events = KEYS[5],
  events_cap = tonumber(ARGV[2]),
}
local id = ARGV[1]
if redis.call('ZREM', K.schedule, id) == 0 then return 0 end
redis.call('HDEL', K.jobs, id)
redis.call('HDEL', K.meta, id)
redis.call('HDEL', K.errors, id)
emit(K, 'cancelled', id, 'at', now_ms())
return 1
