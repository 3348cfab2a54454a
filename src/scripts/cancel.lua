-- cancel: remove a job that is still waiting in the schedule.
--
-- KEYS[1] schedule, KEYS[2] jobs, KEYS[3] meta, KEYS[4] errors
-- ARGV[1] id
-- Returns: 1 when cancelled; 0 when the job is not scheduled (unknown, running, dead).
-- Guarantee: a job being run is never cancelled under its worker's feet.

local id = ARGV[1]
if redis.call('ZREM', KEYS[1], id) == 0 then return 0 end
redis.call('HDEL', KEYS[2], id)
redis.call('HDEL', KEYS[3], id)
redis.call('HDEL', KEYS[4], id)
return 1
