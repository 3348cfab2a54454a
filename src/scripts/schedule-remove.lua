-- schedule-remove: delete a repeating schedule and take back its waiting next occurrence.
--
-- KEYS[1] schedules          HASH name -> definition JSON
-- KEYS[2] schedule payloads  HASH name -> encoded payload template
-- KEYS[3] schedule last      ZSET name -> due time of the last occurrence added
-- KEYS[4] schedule           ZSET id -> due ms
-- KEYS[5] jobs               HASH id -> envelope
-- KEYS[6] meta               HASH id -> bookkeeping
-- KEYS[7] active, KEYS[8] dead, KEYS[9] completed (to tell a waiting occurrence, wheel layout)
-- KEYS[10...]                wheel layout only: ready, wheel, wheel count, then bucket lists (wheel.lua)
-- ARGV[1] name; wheel layout only: ARGV[2] granularity ms, then the start of each bucket list
-- passed in KEYS
-- Returns: 1 when the schedule existed, 0 otherwise. Error 'DELAYQ_WRONG_BUCKET <start>'
--          (nothing written) when the waiting occurrence's wheel bucket was not passed.
-- Guarantee: no occurrence is added after this; the one occurrence that may be waiting for a
--          future time is removed unless it already started. Occurrences already due stay and run.

--!include prelude.lua
--!include wheel.lua
--!include schedule-common.lua

local K = {
  schedules = KEYS[1], payloads = KEYS[2], last = KEYS[3], schedule = KEYS[4], jobs = KEYS[5],
  meta = KEYS[6], active = KEYS[7], dead = KEYS[8], completed = KEYS[9],
}
wheel_keys(K, 10, 2)
local name = ARGV[1]
local now = now_ms()
local last = tonumber(redis.call('ZSCORE', K.last, name))
local waiting = last and last > now
if waiting then
  local missing = missing_buckets(K, {}, { last }, now)
  if missing then return missing end
end
local existed = redis.call('HDEL', K.schedules, name)
redis.call('HDEL', K.payloads, name)
redis.call('ZREM', K.last, name)
if waiting then remove_unstarted(K, occurrence_id(name, last)) end
return existed
