-- release: hand a held job back to waiting without charging the attempt (layout 2,
-- docs/ARCHITECTURE.md §4.5): due now for a worker shutting down before its handler finished
-- (or a prefetched job it never started), after a delay for a job this worker cannot read yet
-- (a payload version newer than it knows, during a rolling deploy), or after the delay a handler
-- asked for by throwing a SnoozeError (a receiver's Retry-After: a snooze).
--
-- KEYS[1] s, KEYS[2] p, KEYS[3] r   the waiting sets of the default and prioritized classes
-- KEYS[4] gq, KEYS[5] gw, KEYS[6] gr, KEYS[7] gc   groups (groups.lua): the job waits in gq again
--             and its group's running slot is freed
-- KEYS[8] gn  ZSET group -> its waiting jobs (groups.lua keeps it with gq)
-- KEYS[9] j   HASH id -> record
-- KEYS[10] a  ZSET lease member -> deadline ms
-- KEYS[11] w  channel: wake messages
-- KEYS[12] ev STREAM of job events
-- KEYS[13] pg HASH id -> the running attempt's progress (deleted: the attempt ended)
-- KEYS[14] n  HASH of counters (`snoozed`, for a snooze)
-- KEYS[15...] wheel strategy only: ready, wheel, wheel count, then bucket lists (wheel.lua)
-- ARGV[1] lease member, ARGV[2] delay ms before it is due again, ARGV[3] group concurrency,
-- ARGV[4] events cap (events.lua; `released` is a routine event, written only with events 'all';
-- `snoozed` is written whatever the events option, like a failure), ARGV[5] why: 'r' a release,
-- 's' a snooze (counted in `snoozed`, event `snoozed`); absent: 'r' (a caller without KEYS[14],
-- the counters, still works for the zset strategies)
-- ARGV[6...] wheel strategy only: granularity ms, then the start of each bucket list in KEYS
-- Returns: 1 when released, 0 when the lease was no longer held (the reaper or a cancel owns the
--          job then); error 'DELAYQ_BAD_ARG <reason>' for a KEYS count other than 14 or 13 (17
--          or more with the wheel), or an argument that is malformed (member, delay, group
--          concurrency, events cap, why); wheel: error
--          'DELAYQ_WRONG_BUCKET <start>' when the new due time's bucket was not passed. Any error
--          means nothing was written.
-- Guarantee (fencing): only the holder of a valid lease can release it. The claim count in the
--          record is kept (tokens stay unique, docs/ARCHITECTURE.md §3.4); only the attempt is given back.

--!include prelude.lua
--!include events.lua
--!include record.lua
--!include wheel.lua
--!include place.lua
--!include wake.lua
--!include lease-check.lua
--!include args.lua

-- Every check before the first write (docs/DESIGN.md invariant 10).
local nkeys = #KEYS
if nkeys ~= 13 and nkeys ~= 14 and nkeys < 17 then
  return bad_arg('KEYS has ' .. nkeys .. ' keys; release takes 14 (13 without n: no snooze; 17 or more with the wheel: wr, wi, wc, then bucket lists)')
end
local member_problem = check_member(ARGV[1], 'ARGV[1] lease member')
if member_problem then return bad_arg(member_problem) end
if not whole_ms(ARGV[2]) or #ARGV[2] > 12 then
  return bad_arg('ARGV[2] delay ' .. tostring(ARGV[2]) .. ' is not a whole number of ms >= 0 (digits only)')
end
local gmax_problem = check_group_concurrency(ARGV[3], 'ARGV[3] group concurrency')
if gmax_problem then return bad_arg(gmax_problem) end

local K = {
  s = KEYS[1], p = KEYS[2], r = KEYS[3], gq = KEYS[4], gw = KEYS[5], gr = KEYS[6], gc = KEYS[7], gn = KEYS[8],
  j = KEYS[9], a = KEYS[10], w = KEYS[11], ev = KEYS[12], pg = KEYS[13], n = KEYS[14],
  events_cap = tonumber(ARGV[4]), gmax = tonumber(ARGV[3]),
}
K.events = K.ev
local wheel_problem = wheel_keys(K, 15, 6)
if wheel_problem then return bad_arg(wheel_problem) end
local cap_problem = check_events_cap(ARGV[4])
if cap_problem then return bad_arg('ARGV[4] ' .. cap_problem) end
-- Absent (a caller without the counters key: 13 keys, 4 values): a release.
local why = ARGV[5] or 'r'
if why ~= 'r' and why ~= 's' then
  return bad_arg('ARGV[5] why ' .. tostring(why) .. ' is not r (release) or s (snooze)')
end
if why == 's' and not K.n then return bad_arg('a snooze needs KEYS[14], the counters hash n') end
local member = ARGV[1]
local id = member_id(member)
local now = now_ms()
local run_at = now + tonumber(ARGV[2])
if lease_lost(K, member, id, now) then return 0 end
local rec = redis.call('HGET', K.j, id)
local h = rec and rec_parse(rec)
-- A held job always has a readable record (claim buries the others); without one there is
-- nothing to put back, and the lease is left for the reaper, which buries it with its reason.
if not h then return 0 end
if K.wi then
  local missing = wheel_missing(K, { run_at }, nil, now)
  if missing then return missing end
end

redis.call('ZREM', K.a, member)
redis.call('HDEL', K.pg, id)
rec = rec_uncharge(rec, h)
h = rec_parse(rec)
redis.call('HSET', K.j, id, rec)
announce_placed(K, place_waiting(K, id, h, run_at, now), run_at)
local group = member_group(member)
if group then group_release_and_wake(K, group, now) end
if why == 's' then
  redis.call('HINCRBY', K.n, 'snoozed', 1)
  emit(K, 'snoozed', id, 'attempt', h.attempts + 1, 'runAt', run_at, 'at', now)
else
  emit(K, 'released', id, 'runAt', run_at, 'at', now)
end
return 1
