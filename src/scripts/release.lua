-- release: hand a held job back to the schedule without charging the attempt: due now for a
-- worker shutting down before its handler finished, or after a delay for a job this worker
-- cannot read yet (a payload version newer than it knows, during a rolling deploy).
--
-- KEYS[1] schedule  ZSET id -> due ms
-- KEYS[2] meta      HASH id -> bookkeeping
-- KEYS[3] active    ZSET id -> lease deadline ms
-- KEYS[4] leases    HASH id -> "token|startMs|workerId"
-- KEYS[5] wake      channel
-- KEYS[6] events    STREAM of job events
-- ARGV[1] id, ARGV[2] token, ARGV[3] delay ms before it is due again, ARGV[4] events cap
-- Returns: 1 when released, 0 when the lease was no longer held (then the reaper owns the job).
-- Guarantee (fencing): only the holder of a valid lease can release it.

--!include prelude.lua
--!include events.lua
--!include lease-check.lua

local K = {
  schedule = KEYS[1], meta = KEYS[2], active = KEYS[3], leases = KEYS[4], wake = KEYS[5],
  events = KEYS[6], events_cap = tonumber(ARGV[4]),
}
local id, token, delay = ARGV[1], ARGV[2], tonumber(ARGV[3])
local now = now_ms()
if check_lease(K, id, token, now) then return 0 end

redis.call('ZREM', K.active, id)
redis.call('HDEL', K.leases, id)
local meta = read_meta(K.meta, id)
if meta.a > 0 then meta.a = meta.a - 1 end
meta.r = now + delay
write_meta(K.meta, id, meta)
redis.call('ZADD', K.schedule, now + delay, id)
wake_if_head(K.schedule, K.wake, now + delay)
emit(K, 'released', id, 'runAt', now + delay, 'at', now)
return 1
