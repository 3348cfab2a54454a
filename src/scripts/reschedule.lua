-- reschedule: move a waiting job to a new due time.
--
-- KEYS[1] schedule  ZSET id -> due ms
-- KEYS[2] meta      HASH id -> bookkeeping
-- KEYS[3] wake      channel
-- KEYS[4] events    STREAM of job events
-- ARGV[1] id, ARGV[2] when-kind ('d' = delay ms from now, 'a' = absolute epoch ms), ARGV[3] when-value,
-- ARGV[4] events cap
-- Returns: the new due time, or -1 when the job is not scheduled (unknown, running, dead).

--!include prelude.lua
--!include events.lua

local K = {
  schedule = KEYS[1], meta = KEYS[2], wake = KEYS[3], events = KEYS[4], events_cap = tonumber(ARGV[4]),
}
local id, kind, value = ARGV[1], ARGV[2], tonumber(ARGV[3])
if not redis.call('ZSCORE', K.schedule, id) then return -1 end
local now = now_ms()
local run_at = value
if kind == 'd' then run_at = now + value end
redis.call('ZADD', K.schedule, 'XX', run_at, id)
local meta = read_meta(K.meta, id)
if meta then
  meta.r = run_at
  write_meta(K.meta, id, meta)
end
wake_if_head(K.schedule, K.wake, run_at)
emit(K, 'rescheduled', id, 'runAt', run_at, 'at', now)
return run_at
