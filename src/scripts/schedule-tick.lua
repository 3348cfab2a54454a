-- schedule-tick: add the next occurrence(s) of one repeating schedule, at most once each.
--
-- KEYS[1] schedules          HASH name -> definition JSON (has "rev")
-- KEYS[2] schedule last      ZSET name -> due time of the last occurrence added (the high-water mark)
-- KEYS[3] schedule           ZSET id -> due ms (the queue's waiting jobs)
-- KEYS[4] jobs               HASH id -> envelope
-- KEYS[5] meta               HASH id -> bookkeeping
-- KEYS[6] wake               channel of the queue's workers
-- KEYS[7] schedule wake      channel of the schedulers
-- KEYS[8] config             HASH the queue's config record: its 'layout' field (absent: zset)
-- KEYS[9] events             STREAM of job events
-- KEYS[10...]                wheel layout only: ready, wheel, wheel count, then bucket lists (wheel.lua)
-- ARGV[1] name
-- ARGV[2] rev the caller computed from
-- ARGV[3] high-water mark the caller computed from (compare-and-set)
-- ARGV[4] grace ms: an occurrence due more than grace ms before now is missed
-- ARGV[5] missed policy: 'skip' or 'runOnce'
-- ARGV[6] meta JSON of each job (a = 0, m = max attempts, b = backoff or absent, o = timeout ms or absent)
-- ARGV[7] C, then C pairs: due ms, envelope (the envelope's id is occurrence_id(name, due)).
--         Ascending, every due after ARGV[3], and no occurrence of the schedule left out
--         between two of them except before the first (those are missed: older than the first).
--         Then the events cap (0 = no events); wheel layout only, after it: granularity ms and
--         the start of each bucket list passed in KEYS.
-- Returns: { status, last, now, n, then per added job: due, created }. status is 'done' (the next
--          occurrence after now is added), 'more' (the candidates ran out before now: call again
--          from the new mark), 'stale' (the mark or the definition changed since the caller read
--          them: nothing written), or 'gone' (no such schedule). created is 0 when a job with
--          the occurrence's id already existed (nothing written for it). Errors, nothing written:
--          'DELAYQ_LAYOUT_MISMATCH <stored>' when the queue's recorded layout is not the caller's;
--          'DELAYQ_WRONG_BUCKET <start>,...' when an occurrence's wheel bucket was not passed.
-- Guarantee: exactly once per occurrence. Only occurrences later than the mark are added, in
--          the same atomic step that moves the mark past them, so however many schedulers race,
--          and even after an occurrence's job finished and was deleted, no occurrence is added
--          twice. (The mark only moves back in schedule-upsert, past an occurrence it took back
--          unstarted.) Whether an occurrence is missed is decided here by the server clock, so
--          racing schedulers cannot disagree.

--!include prelude.lua
--!include events.lua
--!include wheel.lua
--!include add-job.lua
--!include schedule-common.lua

local K = {
  schedules = KEYS[1], last = KEYS[2], schedule = KEYS[3], jobs = KEYS[4], meta = KEYS[5],
  wake = KEYS[6], schedule_wake = KEYS[7], config = KEYS[8], events = KEYS[9],
}
local name, rev, expected = ARGV[1], ARGV[2], tonumber(ARGV[3])
local grace, policy, meta_json = tonumber(ARGV[4]), ARGV[5], ARGV[6]
local count = tonumber(ARGV[7])
K.events_cap = tonumber(ARGV[8 + 2 * count])
wheel_keys(K, 10, 9 + 2 * count)

local refused = assert_layout(K)
if refused then return refused end

local definition = redis.call('HGET', K.schedules, name)
local last = tonumber(redis.call('ZSCORE', K.last, name))
if not definition or not last then return { 'gone', -1, now_ms(), 0 } end
if last ~= expected or cjson.decode(definition).rev ~= rev then
  return { 'stale', last, now_ms(), 0 }
end

local now = now_ms()
local new_last = last
local missed = nil
local picked = {}
local upcoming = false
for i = 0, count - 1 do
  local due = tonumber(ARGV[8 + 2 * i])
  if due > new_last then
    new_last = due
    if due < now - grace then
      missed = i
    else
      picked[#picked + 1] = i
      if due > now then
        upcoming = true
        break
      end
    end
  end
end
if policy == 'runOnce' and missed ~= nil then table.insert(picked, 1, missed) end

local dues = {}
for _, i in ipairs(picked) do dues[#dues + 1] = tonumber(ARGV[8 + 2 * i]) end
local missing = missing_buckets(K, dues, {}, now)
if missing then return missing end

local result = { upcoming and 'done' or 'more', new_last, now, #picked }
local earliest = nil
for n, i in ipairs(picked) do
  local due = dues[n]
  local created, at = add_job(K, occurrence_id(name, due), due, ARGV[9 + 2 * i], cjson.decode(meta_json), now)
  result[#result + 1] = due
  result[#result + 1] = created and 1 or 0
  if created then
    if at ~= nil and (earliest == nil or at < earliest) then earliest = at end
    emit(K, 'added', occurrence_id(name, due), 'runAt', due, 'at', now)
  end
end

if new_last ~= last then
  redis.call('ZADD', K.last, new_last, name)
  wake_if_head(K.last, K.schedule_wake, new_last)
end
announce(K, earliest)
return result
