-- schedule-tick: add the next occurrence(s) of one repeating schedule, at most once each
-- (layout 2: each occurrence is a record placed exactly as add.lua places a job).
--
-- KEYS[1] s, KEYS[2] p, KEYS[3] r   the waiting sets of the default and prioritized classes
-- KEYS[4] gq, KEYS[5] gw, KEYS[6] gr, KEYS[7] gc   groups (issue 16; not built yet)
-- KEYS[8] gn  ZSET group -> its waiting jobs (groups.lua keeps it with gq)
-- KEYS[9] j   HASH id -> record
-- KEYS[10] w   channel: wake messages of the queue's workers
-- KEYS[11] n  HASH of counters (`added`)
-- KEYS[12] ev STREAM of job events (`added`: routine, written only with events 'all')
-- KEYS[13] schedules       HASH name -> definition JSON (has "rev")
-- KEYS[14] schedule last   ZSET name -> due time of the last occurrence added (the high-water mark)
-- KEYS[15] schedule wake   channel of the schedulers
-- KEYS[16] config          HASH the queue's config record: its 'layout' field (absent: zset)
-- KEYS[17...] wheel strategy only: ready, wheel, wheel count, then bucket lists (wheel.lua)
-- ARGV[1] name
-- ARGV[2] rev the caller computed from
-- ARGV[3] high-water mark the caller computed from (compare-and-set)
-- ARGV[4] grace ms: an occurrence due more than grace ms before now is missed
-- ARGV[5] missed policy: 'skip' or 'runOnce'
-- ARGV[6] events cap (events.lua)
-- ARGV[7] the record of every occurrence's job (header + the template's payload bytes; a record
--         holds no id, so one serves them all): default class, never claimed
-- ARGV[8] C, then C due times (ms), ascending, every one after ARGV[3], and no occurrence of the
--         schedule left out between two of them except before the first (those are missed:
--         older than the first)
-- ARGV[9 + C ...] wheel strategy only: granularity ms, then the start of each bucket list in KEYS
-- Returns: { status, last, now, n, then per added job: due, created }. status is 'done' (the next
--          occurrence after now is added), 'more' (the candidates ran out before now: call again
--          from the new mark), 'stale' (the mark or the definition changed since the caller read
--          them: nothing written), or 'gone' (no such schedule). created is 0 when a record with
--          the occurrence's id already existed (waiting, running, dead, or kept as completed or
--          cancelled: nothing written for it). Errors, nothing written:
--          'DELAYQ_LAYOUT_MISMATCH <stored>' when the queue's recorded layout is not the caller's;
--          'DELAYQ_WRONG_BUCKET <start>,...' when an occurrence's wheel bucket was not passed;
--          'DELAYQ_BAD_ARG <reason>' for a KEYS count other than 16 (19 or more with the wheel), a
--          key of another type than the one above, or an argument out of its form: a name as
--          schedule-upsert takes it, a rev of 1..64 letters and digits, a mark or due time that is
--          not a whole ms from 2000 to 9999, a grace that is not a whole ms, a policy other than
--          skip or runOnce, an events cap that is not a whole number, a record that cannot be read,
--          is not a new job of the default class or holds a field no worker can run, C not 1..1000,
--          due times not ascending after the mark, or wheel arguments that do not match the KEYS.
-- Guarantee: exactly once per occurrence. Only occurrences later than the mark are added, in
--          the same atomic step that moves the mark past them, so however many schedulers race,
--          and even after an occurrence's job finished and its record was trimmed, no occurrence
--          is added twice. (The mark only moves back in schedule-upsert, past an occurrence it
--          took back unstarted.) Whether an occurrence is missed is decided here by the server
--          clock, so racing schedulers cannot disagree.

--!include prelude.lua
--!include events.lua
--!include record.lua
--!include wheel.lua
--!include place.lua
--!include wake.lua
--!include args.lua
--!include schedule-args.lua
--!include schedule-common.lua

-- Every check before the first write (docs/DESIGN.md invariant 10): the occurrences are written
-- to several keys and the mark moves after them, so a bad value found late would add jobs and
-- leave the mark behind them (a later tick would find them existing: no harm, but no guarantee).
local key_problem = check_key_count(16, true)
if key_problem then return bad_arg(key_problem) end
local problem = check_schedule_name(ARGV[1], 'ARGV[1] schedule name')
  or check_rev(ARGV[2], 'ARGV[2] rev')
  or check_whole(ARGV[3], 'ARGV[3] high-water mark', MIN_DUE_MS, MAX_DUE_MS)
  or check_whole(ARGV[4], 'ARGV[4] grace ms', 0, MAX_DUE_MS)
  or (ARGV[5] ~= 'skip' and ARGV[5] ~= 'runOnce' and 'ARGV[5] missed policy ' .. tostring(ARGV[5]) .. ' is not skip or runOnce')
  or (check_events_cap(ARGV[6]) and 'ARGV[6] ' .. check_events_cap(ARGV[6]))
if problem then return bad_arg(problem) end
local h, unreadable = rec_parse(ARGV[7])
if not h then return bad_arg('ARGV[7] occurrence record: ' .. unreadable) end
if h.prio ~= 0 or h.group or h.completed or h.cancelled or h.has_error or h.has_result or rec_has(h.fa, REC_A_CLAIM) then
  return bad_arg('ARGV[7] occurrence record must be a new job of the default class (no priority, group, claim block or E, D, Q, U flag)')
end
problem = h ~= REC_DEFAULT_MEMO.h and check_new_header(ARGV[7], h)
if problem then return bad_arg('ARGV[7] occurrence ' .. problem) end
problem = check_whole(ARGV[8], 'ARGV[8] C (the number of due times)', 1, 1000)
if problem then return bad_arg(problem) end
local count = tonumber(ARGV[8])
if #ARGV < 8 + count or (KEYS[17] == nil and #ARGV > 8 + count) then
  return bad_arg('ARGV has ' .. #ARGV .. ' values; C = ' .. count .. ' takes 8 + C'
    .. (KEYS[17] and ', then the wheel\'s' or ' without the wheel'))
end
local after = tonumber(ARGV[3])
for i = 1, count do
  local what = 'ARGV[' .. (8 + i) .. '] due time'
  problem = check_whole(ARGV[8 + i], what, MIN_DUE_MS, MAX_DUE_MS)
  if problem then return bad_arg(problem) end
  if tonumber(ARGV[8 + i]) <= after then
    return bad_arg(what .. ' ' .. ARGV[8 + i] .. ' is not after ' .. (i == 1 and 'the mark ARGV[3]' or 'the one before it'))
  end
  after = tonumber(ARGV[8 + i])
end

local K = {
  s = KEYS[1], p = KEYS[2], r = KEYS[3], gq = KEYS[4], gw = KEYS[5], gr = KEYS[6], gc = KEYS[7], gn = KEYS[8],
  j = KEYS[9], w = KEYS[10], n = KEYS[11], ev = KEYS[12], schedules = KEYS[13], last = KEYS[14],
  schedule_wake = KEYS[15], config = KEYS[16], events_cap = tonumber(ARGV[6]),
}
K.events = K.ev
local wheel_problem = wheel_keys(K, 17, 9 + count)
if wheel_problem then return bad_arg(wheel_problem) end
-- s p r gq gw gr, gc, gn, j, w (channel), n, ev, schedules, last, schedule wake (channel), config.
local type_problem = check_key_types('zzzzzzhzh-hxhz-h', true)
if type_problem then return bad_arg(type_problem) end
local name, rev, expected = ARGV[1], ARGV[2], tonumber(ARGV[3])
local grace, policy, record = tonumber(ARGV[4]), ARGV[5], ARGV[7]

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
for i = 1, count do
  local due = tonumber(ARGV[8 + i])
  if due > new_last then
    new_last = due
    if due < now - grace then
      missed = due
    else
      picked[#picked + 1] = due
      if due > now then
        upcoming = true
        break
      end
    end
  end
end
if policy == 'runOnce' and missed ~= nil then table.insert(picked, 1, missed) end

if K.wi then
  local missing = wheel_missing(K, picked, nil, now)
  if missing then return missing end
end

local result = { upcoming and 'done' or 'more', new_last, now, #picked }
local created = 0
if #picked > 0 then
  local ids = {}
  for i, due in ipairs(picked) do ids[i] = occurrence_id(name, due) end
  -- One read for all of them: any record of the id (even a completed or cancelled one kept in j)
  -- means the occurrence was added before, as add.lua's existence rule.
  local existing = redis.call('HMGET', K.j, unpack(ids))
  for i, due in ipairs(picked) do
    result[#result + 1] = due
    if existing[i] then
      result[#result + 1] = 0
    else
      redis.call('HSET', K.j, ids[i], record)
      -- Ascending due times: only the first job placed can move a head earlier, so this sends
      -- at most one message.
      announce_placed(K, place_waiting(K, ids[i], h, due, now), due)
      created = created + 1
      result[#result + 1] = 1
      emit(K, 'added', ids[i], 'runAt', due, 'at', now)
    end
  end
end
if created > 0 then redis.call('HINCRBY', K.n, 'added', created) end

if new_last ~= last then
  redis.call('ZADD', K.last, new_last, name)
  wake_if_head(K.last, K.schedule_wake, new_last)
end
return result
