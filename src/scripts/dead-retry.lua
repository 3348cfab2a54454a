-- dead-retry: move dead jobs back to waiting, due now, with their attempts reset.
--
-- KEYS[1] dead      ZSET id -> died at ms
-- KEYS[2] schedule  ZSET id -> due ms
-- KEYS[3] meta      HASH id -> bookkeeping
-- KEYS[4] wake      channel
-- KEYS[5] events    STREAM of job events
-- KEYS[6..8]        wheel layout only: ready, wheel, wheel count (wheel.lua)
-- ARGV[1] id, or '' for the oldest dead jobs; ARGV[2] max jobs this call (with ''), ARGV[3] events cap,
-- ARGV[4] wheel layout only: granularity ms
-- Returns: how many jobs were moved. The last error stays readable through get().

--!include prelude.lua
--!include events.lua
--!include wheel.lua

local K = {
  dead = KEYS[1], schedule = KEYS[2], meta = KEYS[3], wake = KEYS[4], events = KEYS[5],
  events_cap = tonumber(ARGV[3]),
}
wheel_keys(K, 6, 4)
local ids
if ARGV[1] ~= '' then
  ids = { ARGV[1] }
else
  ids = redis.call('ZRANGE', K.dead, 0, tonumber(ARGV[2]) - 1)
end
local now = now_ms()
local moved = 0
local at = nil
for _, id in ipairs(ids) do
  if redis.call('ZREM', K.dead, id) == 1 then
    local meta = read_meta(K.meta, id) or { m = 1 }
    meta.a = 0
    meta.r = now
    meta.t = nil
    write_meta(K.meta, id, meta)
    at = place(K, id, now, now)
    emit(K, 'retried', id, 'runAt', now, 'at', now)
    moved = moved + 1
  end
end
announce(K, at)
return moved
