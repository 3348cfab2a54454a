-- reap: return jobs whose lease expired to the schedule (due now), or bury them with
-- reason "lease expired" when their attempts are spent. Any worker may run it, any time.
--
-- KEYS[1] schedule  ZSET id -> due ms
-- KEYS[2] jobs      HASH id -> envelope
-- KEYS[3] meta      HASH id -> bookkeeping
-- KEYS[4] active    ZSET id -> lease deadline ms
-- KEYS[5] leases    HASH id -> "token|startMs|workerId"
-- KEYS[6] dead      ZSET id -> died at ms
-- KEYS[7] errors    HASH id -> last error
-- KEYS[8] wake      channel
-- KEYS[9] events    STREAM of job events
-- KEYS[10] progress HASH id -> the running job's last progress value (deleted: the attempt ended)
-- KEYS[11..13]      wheel layout only: ready, wheel, wheel count (wheel.lua)
-- ARGV[1] max jobs this call, ARGV[2] dead max count, ARGV[3] dead max age ms, ARGV[4] events cap,
-- ARGV[5] wheel layout only: granularity ms
-- Returns: { returned, buried, next_deadline or -1 }
-- Guarantee: idempotent; a job is reaped only once its deadline has passed by the server clock.

--!include prelude.lua
--!include events.lua
--!include wheel.lua
--!include bury.lua
--!include reap-expired.lua

local K = {
  schedule = KEYS[1], jobs = KEYS[2], meta = KEYS[3], active = KEYS[4], leases = KEYS[5],
  dead = KEYS[6], errors = KEYS[7], wake = KEYS[8], events = KEYS[9], events_cap = tonumber(ARGV[4]),
  progress = KEYS[10],
}
wheel_keys(K, 11, 5)
local now = now_ms()
local returned, buried = reap_expired(K, now, tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]))
-- Returned jobs are due now: in the wheel layout they are in ready, which wakes blocked workers.
if returned > 0 and not K.wheel then announce(K, now) end
local next_deadline = -1
local head = redis.call('ZRANGE', K.active, 0, 0, 'WITHSCORES')
if head[2] then next_deadline = tonumber(head[2]) end
return { returned, buried, next_deadline }
