-- add: accept N jobs into the schedule; an id that already exists is left untouched.
--
-- KEYS[1] schedule  ZSET id -> due ms
-- KEYS[2] jobs      HASH id -> envelope
-- KEYS[3] meta      HASH id -> bookkeeping (see prelude)
-- KEYS[4] wake      channel
-- KEYS[5] events    STREAM of job events
-- ARGV[1] N, then 5 per job: id, when-kind ('d' = delay ms from now, 'a' = absolute epoch ms),
--         when-value, envelope, meta (JSON: a = 0, m = max attempts, b = backoff or absent);
--         last: events cap (0 = no events)
-- Returns: { created_1, run_at_1, created_2, run_at_2, ... }; created is 1, or 0 when the id
--          existed (run_at is then the existing job's due time).
-- Guarantee: all N jobs are checked and written in one atomic step; the due time of a
--          delayed job is counted from the server's clock.

--!include prelude.lua
--!include events.lua

local K = {
  schedule = KEYS[1], jobs = KEYS[2], meta = KEYS[3], wake = KEYS[4], events = KEYS[5],
  events_cap = tonumber(ARGV[#ARGV]),
}
local now = now_ms()
local n = tonumber(ARGV[1])
local result = {}
local earliest = nil

for i = 0, n - 1 do
  local base = 2 + i * 5
  local id, kind, value = ARGV[base], ARGV[base + 1], tonumber(ARGV[base + 2])
  local run_at = value
  if kind == 'd' then run_at = now + value end
  if redis.call('HSETNX', K.jobs, id, ARGV[base + 3]) == 1 then
    local meta = cjson.decode(ARGV[base + 4])
    meta.r = run_at
    write_meta(K.meta, id, meta)
    redis.call('ZADD', K.schedule, run_at, id)
    result[#result + 1] = 1
    result[#result + 1] = run_at
    if earliest == nil or run_at < earliest then earliest = run_at end
    emit(K, 'added', id, 'runAt', run_at, 'at', now)
  else
    local meta = read_meta(K.meta, id)
    result[#result + 1] = 0
    result[#result + 1] = meta and meta.r or -1
  end
end

if earliest ~= nil then wake_if_head(K.schedule, K.wake, earliest) end
return result
