-- dead-retry: move dead jobs back to the schedule, due now, with their attempts reset.
--
-- KEYS[1] dead      ZSET id -> died at ms
-- KEYS[2] schedule  ZSET id -> due ms
-- KEYS[3] meta      HASH id -> bookkeeping
-- KEYS[4] wake      channel
-- KEYS[5] events    STREAM of job events
-- ARGV[1] id, or '' for the oldest dead jobs; ARGV[2] max jobs this call (with ''), ARGV[3] events cap
-- Returns: how many jobs were moved. The last error stays readable through get().

--!include prelude.lua
--!include events.lua

local K = {
  dead = KEYS[1], schedule = KEYS[2], meta = KEYS[3], wake = KEYS[4], events = KEYS[5],
  events_cap = tonumber(ARGV[3]),
}
local ids
if ARGV[1] ~= '' then
  ids = { ARGV[1] }
else
  ids = redis.call('ZRANGE', K.dead, 0, tonumber(ARGV[2]) - 1)
end
local now = now_ms()
local moved = 0
for _, id in ipairs(ids) do
  if redis.call('ZREM', K.dead, id) == 1 then
    local meta = read_meta(K.meta, id) or { m = 1 }
    meta.a = 0
    meta.r = now
    meta.t = nil
    write_meta(K.meta, id, meta)
    redis.call('ZADD', K.schedule, now, id)
    emit(K, 'retried', id, 'runAt', now, 'at', now)
    moved = moved + 1
  end
end
if moved > 0 then wake_if_head(K.schedule, K.wake, now) end
return moved
