-- cancel: remove a job that is still waiting.
--
-- KEYS[1] schedule, KEYS[2] jobs, KEYS[3] meta, KEYS[4] errors, KEYS[5] events,
-- KEYS[6] active, KEYS[7] dead, KEYS[8] completed
-- KEYS[9...] wheel layout only: ready, wheel, wheel count, then bucket lists (wheel.lua)
-- ARGV[1] id, ARGV[2] events cap
-- ARGV[3...] wheel layout only: granularity ms, then the start of each bucket list passed in KEYS
-- Returns: 1 when cancelled; 0 when the job is not waiting (unknown, running, dead); wheel
--          layout: error 'DELAYQ_WRONG_BUCKET <start>' (nothing written) when the job's bucket
--          (by its meta `r`) is in the wheel but was not passed.
-- Cost: zset layout O(log n); wheel layout O(length of the job's bucket, or of ready) (LREM).
-- Guarantee: a job being run is never cancelled under its worker's feet.

--!include prelude.lua
--!include events.lua
--!include wheel.lua

local K = {
  schedule = KEYS[1], jobs = KEYS[2], meta = KEYS[3], errors = KEYS[4], events = KEYS[5],
  active = KEYS[6], dead = KEYS[7], completed = KEYS[8], events_cap = tonumber(ARGV[2]),
}
wheel_keys(K, 9, 3)
local id = ARGV[1]
if not is_waiting(K, id) then return 0 end
local meta = read_meta(K.meta, id)
local missing = missing_buckets(K, {}, { meta and meta.r or 0 }, now_ms())
if missing then return missing end
if not unplace(K, id, meta) then return 0 end
redis.call('HDEL', K.jobs, id)
redis.call('HDEL', K.meta, id)
redis.call('HDEL', K.errors, id)
emit(K, 'cancelled', id, 'at', now_ms())
return 1
