-- schedule-upsert: create a repeating schedule, or replace its definition.
--
-- KEYS[1] schedules          HASH name -> definition JSON (has "rev")
-- KEYS[2] schedule payloads  HASH name -> encoded payload template
-- KEYS[3] schedule last      ZSET name -> due time of the last occurrence added (the high-water mark)
-- KEYS[4] schedule           ZSET id -> due ms (the queue's waiting jobs)
-- KEYS[5] jobs               HASH id -> envelope
-- KEYS[6] meta               HASH id -> bookkeeping
-- KEYS[7] schedule wake      channel
-- KEYS[8] config             HASH the queue's config record: its 'layout' field (absent: zset)
-- KEYS[9] active, KEYS[10] dead, KEYS[11] completed (to tell a waiting occurrence, wheel layout)
-- KEYS[12...]                wheel layout only: ready, wheel, wheel count, then bucket lists (wheel.lua)
-- ARGV[1] name, ARGV[2] rev (digest of the definition and payload), ARGV[3] definition JSON,
-- ARGV[4] payload template; wheel layout only: ARGV[5] granularity ms, then the start of each
-- bucket list passed in KEYS
-- Returns: { status, last }: status 'unchanged' (same rev: nothing written), 'created' or
--          'updated'; last is the schedule's high-water mark afterwards (epoch ms). Errors, nothing
--          written: 'DELAYQ_LAYOUT_MISMATCH <stored>' when the queue's recorded layout is not the
--          caller's; 'DELAYQ_WRONG_BUCKET <start>' when the waiting occurrence's bucket was not passed.
-- Guarantee: a new schedule adds only occurrences after now. A changed one takes back its
--          waiting, never-started next occurrence and continues after now with the new
--          definition (or after its mark, when schedulers are behind); the mark never passes
--          an occurrence that was added and not taken back, so none is added twice.

--!include prelude.lua
--!include wheel.lua
--!include schedule-common.lua

local K = {
  schedules = KEYS[1], payloads = KEYS[2], last = KEYS[3], schedule = KEYS[4], jobs = KEYS[5],
  meta = KEYS[6], schedule_wake = KEYS[7], config = KEYS[8], active = KEYS[9], dead = KEYS[10],
  completed = KEYS[11],
}
wheel_keys(K, 12, 5)
local name, rev, definition, payload = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local refused = assert_layout(K)
if refused then return refused end
local now = now_ms()

local old = redis.call('HGET', K.schedules, name)
local last = tonumber(redis.call('ZSCORE', K.last, name))
if old and last and cjson.decode(old).rev == rev then
  return { 'unchanged', last }
end
if old and last and last > now then
  local missing = missing_buckets(K, {}, { last }, now)
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
