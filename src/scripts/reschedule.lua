-- reschedule: move a waiting job to a new due time, in its own class (layout 2,
-- docs/ARCHITECTURE.md §4.9).
--
-- KEYS[1] s, KEYS[2] p, KEYS[3] r   the waiting sets of the default and prioritized classes
-- KEYS[4] gq, KEYS[5] gw, KEYS[6] gr, KEYS[7] gc   groups (groups.lua)
-- KEYS[8] gn  ZSET group -> its waiting jobs (groups.lua keeps it with gq)
-- KEYS[9] j   HASH id -> record
-- KEYS[10] w   channel: wake messages (the head moved earlier)
-- KEYS[11] ev STREAM of job events (`rescheduled`: routine, written only with events 'all')
-- KEYS[12...] wheel strategy only: ready, wheel, wheel count, then bucket lists (wheel.lua)
-- ARGV[1] id, ARGV[2] when-kind ('d' = delay ms from now, 'a' = absolute epoch ms), ARGV[3]
-- when-value, ARGV[4] group concurrency, ARGV[5] events cap (events.lua)
-- ARGV[6...] wheel strategy only: granularity ms, then the start of each bucket list in KEYS
-- Returns: the new due time, or -1 when the job is not waiting (unknown, running, dead,
--          completed, cancelled); error 'DELAYQ_BAD_ARG <reason>' (nothing written) when the
--          when-value is not plain digits or the due time is outside [2000-01-01, 9999-12-31];
--          wheel: error 'DELAYQ_WRONG_BUCKET <start>,...' (nothing written) when the old or new
--          bucket was not passed.
-- Cost: O(log n); wheel strategy: O(length of the old bucket) (LREM).
-- Guarantee: a rescheduled job stays in exactly one waiting set, that of its class; its record
--          (attempts, claims, payload) is unchanged.

--!include prelude.lua
--!include events.lua
--!include record.lua
--!include wheel.lua
--!include place.lua
--!include wake.lua
--!include args.lua

-- Checks before the first write (docs/DESIGN.md invariant 10).
local key_problem = check_key_count(11, true)
if key_problem then return bad_arg(key_problem) end
local id_problem = check_id(ARGV[1], 'ARGV[1] id')
if id_problem then return bad_arg(id_problem) end

local K = {
  s = KEYS[1], p = KEYS[2], r = KEYS[3], gq = KEYS[4], gw = KEYS[5], gr = KEYS[6], gc = KEYS[7], gn = KEYS[8],
  j = KEYS[9], w = KEYS[10], ev = KEYS[11], events_cap = tonumber(ARGV[5]),
  gmax = tonumber(ARGV[4]),
}
K.events = K.ev
local wheel_problem = wheel_keys(K, 12, 6)
if wheel_problem then return bad_arg(wheel_problem) end
local id = ARGV[1]
local now = now_ms()
local run_at, problem = check_when(ARGV[2], ARGV[3], now)
if problem then return bad_arg(problem) end
local gmax_problem = check_group_concurrency(ARGV[4], 'ARGV[4] group concurrency')
if gmax_problem then return bad_arg(gmax_problem) end
local cap_problem = check_events_cap(ARGV[5])
if cap_problem then return bad_arg(cap_problem) end
local rec = redis.call('HGET', K.j, id)
local h = rec and rec_parse(rec)
if not h or h.completed or h.cancelled then return -1 end
if K.wi then
  local missing = wheel_missing(K, { run_at }, { id }, now)
  if missing then return missing end
end
if not unplace_waiting(K, id, h) then return -1 end
announce_placed(K, place_waiting(K, id, h, run_at, now), run_at)
emit(K, 'rescheduled', id, 'runAt', run_at, 'at', now)
return run_at
