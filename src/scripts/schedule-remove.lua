-- schedule-remove: delete a repeating schedule and take back its waiting next occurrence.
--
-- KEYS[1] schedules          HASH name -> definition JSON
-- KEYS[2] schedule payloads  HASH name -> encoded payload template
-- KEYS[3] schedule last      ZSET name -> due time of the last occurrence added
-- KEYS[4] schedule           ZSET id -> due ms
-- KEYS[5] jobs               HASH id -> envelope
-- KEYS[6] meta               HASH id -> bookkeeping
-- ARGV[1] name
-- Returns: 1 when the schedule existed, 0 otherwise.
-- Guarantee: no occurrence is added after this; the one occurrence that may be waiting for a
--          future time is removed unless it already started. Occurrences already due stay and run.

--!include prelude.lua
--!include schedule-common.lua

local K = {
  schedules = KEYS[1], payloads = KEYS[2], last = KEYS[3], schedule = KEYS[4], jobs = KEYS[5],
  meta = KEYS[6],
}
local name = ARGV[1]
local existed = redis.call('HDEL', K.schedules, name)
redis.call('HDEL', K.payloads, name)
local last = tonumber(redis.call('ZSCORE', K.last, name))
redis.call('ZREM', K.last, name)
if last and last > now_ms() then remove_unstarted(K, occurrence_id(name, last)) end
return existed
