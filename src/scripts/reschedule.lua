-- reschedule: move a waiting job to a new due time.
--
-- KEYS[1] schedule  ZSET id -> due ms
-- KEYS[2] meta      HASH id -> bookkeeping
-- KEYS[3] wake      channel
-- ARGV[1] id, ARGV[2] when-kind ('d' = delay ms from now, 'a' = absolute epoch ms), ARGV[3] when-value
-- Returns: the new due time, or -1 when the job is not scheduled (unknown, running, dead).

--!include prelude.lua

local K = { schedule = KEYS[1], meta = KEYS[2], wake = KEYS[3] }
local id, kind, value = ARGV[1], ARGV[2], tonumber(ARGV[3])
if not redis.call('ZSCORE', K.schedule, id) then return -1 end
local run_at = value
if kind == 'd' then run_at = now_ms() + value end
redis.call('ZADD', K.schedule, 'XX', run_at, id)
local meta = read_meta(K.meta, id)
if meta then
  meta.r = run_at
  write_meta(K.meta, id, meta)
end
wake_if_head(K.schedule, K.wake, run_at)
return run_at
