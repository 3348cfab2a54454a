-- schedule-remove: delete a repeating schedule and take back its waiting next occurrence (layout 2).
--
-- KEYS[1] schedules          HASH name -> definition JSON
-- KEYS[2] schedule payloads  HASH name -> payload template
-- KEYS[3] schedule last      ZSET name -> due time of the last occurrence added
-- KEYS[4] s, KEYS[5] p, KEYS[6] r   the waiting sets of the default and prioritized classes
-- KEYS[7] gq, KEYS[8] gw, KEYS[9] gr, KEYS[10] gc   groups (issue 16; not built yet)
-- KEYS[11] gn  ZSET group -> its waiting jobs (groups.lua keeps it with gq)
-- KEYS[12] j  HASH id -> record
-- KEYS[13] e  HASH id -> last error
-- KEYS[14...] wheel strategy only: ready, wheel, wheel count, then bucket lists (wheel.lua)
-- ARGV[1] name; ARGV[2...] wheel strategy only: granularity ms, then the start of each bucket
-- list passed in KEYS
-- Returns: 1 when the schedule existed, 0 otherwise. Error 'DELAYQ_WRONG_BUCKET <start>'
--          (nothing written) when the waiting occurrence's wheel bucket was not passed;
--          'DELAYQ_BAD_ARG <reason>' (nothing written) for a KEYS count other than 13 (16 or more
--          with the wheel), a key of another type than the one above, a name as schedule-upsert
--          takes it, or wheel arguments that do not match the wheel KEYS.
-- Guarantee: no occurrence is added after this; the one occurrence that may be waiting for a
--          future time is removed unless it already started. Occurrences already due stay and run.

--!include prelude.lua
--!include record.lua
--!include wheel.lua
--!include place.lua
--!include args.lua
--!include schedule-args.lua
--!include schedule-common.lua

-- Every check before the first write (docs/DESIGN.md invariant 10): the schedule's three keys
-- and its waiting occurrence go together or not at all.
local key_problem = check_key_count(13, true)
if key_problem then return bad_arg(key_problem) end
local problem = check_schedule_name(ARGV[1], 'ARGV[1] schedule name')
  or (KEYS[14] == nil and check_arg_count(1, 'schedule-remove without the wheel'))
if problem then return bad_arg(problem) end

local K = {
  schedules = KEYS[1], payloads = KEYS[2], last = KEYS[3],
  s = KEYS[4], p = KEYS[5], r = KEYS[6], gq = KEYS[7], gw = KEYS[8], gr = KEYS[9], gc = KEYS[10], gn = KEYS[11],
  j = KEYS[12], e = KEYS[13],
}
local wheel_problem = wheel_keys(K, 14, 2)
if wheel_problem then return bad_arg(wheel_problem) end
-- schedules, payloads, last, s p r gq gw gr, gc, gn, j, e; then the wheel's.
local type_problem = check_key_types('hhzzzzzzzhzhh', true)
if type_problem then return bad_arg(type_problem) end
local name = ARGV[1]
local now = now_ms()
local last = tonumber(redis.call('ZSCORE', K.last, name))
local waiting = last and last > now
if waiting and K.wi then
  local missing = wheel_missing(K, {}, { occurrence_id(name, last) }, now)
  if missing then return missing end
end
local existed = redis.call('HDEL', K.schedules, name)
redis.call('HDEL', K.payloads, name)
redis.call('ZREM', K.last, name)
if waiting then remove_unstarted(K, occurrence_id(name, last)) end
return existed
