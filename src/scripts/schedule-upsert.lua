-- schedule-upsert: create a repeating schedule, or replace its definition (layout 2).
--
-- KEYS[1] schedules          HASH name -> definition JSON (has "rev")
-- KEYS[2] schedule payloads  HASH name -> the payload template: the payload bytes as the queue's
--                            codec encodes them (what follows the header of each occurrence's record)
-- KEYS[3] schedule last      ZSET name -> due time of the last occurrence added (the high-water mark)
-- KEYS[4] schedule wake      channel of the schedulers
-- KEYS[5] config             HASH the queue's config record: its 'layout' field (absent: zset)
-- KEYS[6] s, KEYS[7] p, KEYS[8] r   the waiting sets of the default and prioritized classes
-- KEYS[9] gq, KEYS[10] gw, KEYS[11] gr, KEYS[12] gc   groups (issue 16; not built yet)
-- KEYS[13] gn  ZSET group -> its waiting jobs (groups.lua keeps it with gq)
-- KEYS[14] j  HASH id -> record
-- KEYS[15] e  HASH id -> last error
-- KEYS[16...] wheel strategy only: ready, wheel, wheel count, then bucket lists (wheel.lua)
-- ARGV[1] name, ARGV[2] rev (digest of the definition and payload), ARGV[3] definition JSON,
-- ARGV[4] payload template; ARGV[5...] wheel strategy only: granularity ms, then the start of
-- each bucket list passed in KEYS
-- Returns: { status, last }: status 'unchanged' (same rev: nothing written), 'created' or
--          'updated'; last is the schedule's high-water mark afterwards (epoch ms). Errors, nothing
--          written: 'DELAYQ_LAYOUT_MISMATCH <stored>' when the queue's recorded layout is not the
--          caller's; 'DELAYQ_WRONG_BUCKET <start>' when the waiting occurrence's bucket was not passed;
--          'DELAYQ_BAD_ARG <reason>' for a KEYS count other than 15 (18 or more with the wheel), a key
--          of another type than the one above, a name that is empty, over 600 bytes, with white
--          space or a control character or not UTF-8, a rev that is not 1..64 letters and digits, a
--          definition that is not one the schedulers can read (schedule-args.lua) or whose rev is
--          not ARGV[2], or wheel arguments that do not match the wheel KEYS.
-- Guarantee: a new schedule adds only occurrences after now. A changed one takes back its
--          waiting, never-started next occurrence and continues after now with the new
--          definition (or after its mark, when schedulers are behind); the mark never passes
--          an occurrence that was added and not taken back, so none is added twice.

--!include prelude.lua
--!include record.lua
--!include wheel.lua
--!include place.lua
--!include args.lua
--!include schedule-args.lua
--!include schedule-common.lua

-- Every check before the first write (docs/DESIGN.md invariant 10): the writes go to three keys
-- and then take an occurrence back from its waiting set, so a bad key or value found late would
-- leave a definition stored without its mark, or a mark without its definition.
local key_problem = check_key_count(15, true)
if key_problem then return bad_arg(key_problem) end
local problem = check_schedule_name(ARGV[1], 'ARGV[1] schedule name')
  or check_rev(ARGV[2], 'ARGV[2] rev')
  or check_definition(ARGV[3], 'ARGV[3] definition', ARGV[2])
  or (type(ARGV[4]) ~= 'string' and 'ARGV[4] payload template is missing')
  or (KEYS[16] == nil and check_arg_count(4, 'schedule-upsert without the wheel'))
if problem then return bad_arg(problem) end

local K = {
  schedules = KEYS[1], payloads = KEYS[2], last = KEYS[3], schedule_wake = KEYS[4], config = KEYS[5],
  s = KEYS[6], p = KEYS[7], r = KEYS[8], gq = KEYS[9], gw = KEYS[10], gr = KEYS[11], gc = KEYS[12], gn = KEYS[13],
  j = KEYS[14], e = KEYS[15],
}
local wheel_problem = wheel_keys(K, 16, 5)
if wheel_problem then return bad_arg(wheel_problem) end
-- schedules, payloads, last, wake (channel), config, s p r gq gw gr, gc, gn, j, e; then the wheel's.
local type_problem = check_key_types('hhz-hzzzzzzhzhh', true)
if type_problem then return bad_arg(type_problem) end
local name, rev, definition, payload = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local refused = assert_layout(K)
if refused then return refused end
local now = now_ms()

local old = redis.call('HGET', K.schedules, name)
local last = tonumber(redis.call('ZSCORE', K.last, name))
-- A stored definition that does not decode (written by hand) is replaced, not an error forever.
local decoded, stored = pcall(cjson.decode, old or 'null')
if old and last and decoded and type(stored) == 'table' and stored.rev == rev then
  return { 'unchanged', last }
end
if old and last and last > now and K.wi then
  local missing = wheel_missing(K, {}, { occurrence_id(name, last) }, now)
  if missing then return missing end
end

local new_last = now
if old and last then
  if last > now then
    -- The old definition's next occurrence is waiting. Take it back; if that is impossible (it
    -- was cancelled, or started), keep the mark so that occurrence is never added a second time.
    if not remove_unstarted(K, occurrence_id(name, last)) then new_last = last end
  else
    -- Schedulers are behind: occurrences after the mark are not added yet. Keep the mark, so the
    -- next tick adds them (or applies the missed policy) under the new definition.
    new_last = last
  end
end

redis.call('HSET', K.schedules, name, definition)
redis.call('HSET', K.payloads, name, payload)
redis.call('ZADD', K.last, new_last, name)
wake_if_head(K.last, K.schedule_wake, new_last)
return { old and 'updated' or 'created', new_last }
