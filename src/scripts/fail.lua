-- fail: an attempt failed; schedule a retry after the given delay, or bury the job (layout 2,
-- docs/ARCHITECTURE.md §4.4).
--
-- KEYS[1] s   ZSET id -> due ms: waiting jobs of the default class
-- KEYS[2] p   ZSET "<prio>:<id>" -> due ms: waiting prioritized jobs, not yet due
-- KEYS[3] r   ZSET "<prio>:<id>" -> (prio + 1024) * 2^42 + due: due prioritized jobs
-- KEYS[4] gq, KEYS[5] gw, KEYS[6] gr, KEYS[7] gc   groups (groups.lua): a grouped job's retry
--             waits in gq, and its group's running slot is freed
-- KEYS[8] gn  ZSET group -> its waiting jobs (groups.lua keeps it with gq)
-- KEYS[9] j   HASH id -> record (header + payload)
-- KEYS[10] a   ZSET lease member "<claims>.<claimed at>|<id>" -> deadline ms
-- KEYS[11] d  ZSET id -> died at ms
-- KEYS[12] e  HASH id -> JSON of the last error
-- KEYS[13] w  channel: wake messages (the head moved earlier)
-- KEYS[14] n  HASH of counters: `failed` (an attempt failed and runs again) or `dead`
-- KEYS[15] ev STREAM of job events
-- KEYS[16] pg HASH id -> the running attempt's progress (deleted: the attempt ended)
-- KEYS[17] x  ZSET id -> cancelled at ms (only read: the reason a cancelled job's holder gets)
-- KEYS[18] f  HASH flow bookkeeping (flow.lua)
-- KEYS[19] fw ZSET parent -> its own due ms: flow parents waiting for their children;
--             a flow member's burial ends it for its parent
-- KEYS[20...] wheel strategy only: ready, wheel, wheel count, then bucket lists (wheel.lua)
-- ARGV[1] lease member, ARGV[2] retry delay ms (-1: no retry), ARGV[3] error JSON
-- ({name, message, stack?}; the script adds at, attempt and token), ARGV[4] unrecoverable (0/1:
-- 1 buries at once, whatever attempts are left), ARGV[5] dead max count, ARGV[6] dead max age ms,
-- ARGV[7] group concurrency, ARGV[8] short reason for the event, ARGV[9] events cap (events.lua)
-- ARGV[10...] wheel strategy only: granularity ms, then the start of each bucket list in KEYS
-- Returns: { 'RETRY', run_at } or { 'DEAD', died_at }; { 'ALREADY', -1 } when this fail was
--          already applied (a resent command: the last error carries this member's token); error
--          'DELAYQ_LEASE_LOST <why>' (why: cancelled, expired, not held); error 'DELAYQ_BAD_ARG
--          <reason>' for a KEYS count other than 19 (22 or more with the wheel) or a malformed
--          argument, named (ARGV[2] retry delay ...); error 'DELAYQ_BAD_RECORD <reason>, job <id>' when the
--          held job's record cannot be read; wheel: error 'DELAYQ_WRONG_BUCKET <start>' when the
--          retry's bucket was not passed. Any error means nothing was written.
-- Guarantee (fencing, docs/DESIGN.md invariant 4): only the holder of a valid lease can fail the job; a
--          failure is always visible (invariant 5): error in e, E flag in the record, one
--          counter (failed, or dead for the last attempt: the metrics add the two), and a `failed` (and `dead`) event whatever the events option.

--!include prelude.lua
--!include events.lua
--!include record.lua
--!include wheel.lua
--!include place.lua
--!include wake.lua
--!include bury.lua
--!include flow.lua
--!include lease-check.lua
--!include args.lua

-- Every check before the first write (docs/DESIGN.md invariant 10).
local key_problem = check_key_count(19, true)
if key_problem then return bad_arg(key_problem) end
local member_problem = check_member(ARGV[1], 'ARGV[1] lease member')
if member_problem then return bad_arg(member_problem) end
if ARGV[2] ~= '-1' and (not whole_ms(ARGV[2]) or #ARGV[2] > 12) then
  return bad_arg('ARGV[2] retry delay ' .. tostring(ARGV[2]) .. ' is not -1 or a whole number of ms >= 0')
end
local ok_error, error_table = pcall(cjson.decode, ARGV[3] or '')
if not ok_error or type(error_table) ~= 'table' then return bad_arg('ARGV[3] error is not a JSON object') end
if ARGV[4] ~= '0' and ARGV[4] ~= '1' then
  return bad_arg('ARGV[4] unrecoverable ' .. tostring(ARGV[4]) .. ' is not 0 or 1')
end
local DEAD_BOUNDS = { 'dead max count', 'dead max age ms' }
for i = 5, 6 do
  local what = DEAD_BOUNDS[i - 4]
  if not whole_ms(ARGV[i]) or #ARGV[i] > 15 then
    return bad_arg('ARGV[' .. i .. '] ' .. what .. ' ' .. tostring(ARGV[i]) .. ' is not a whole number >= 0 (digits only)')
  end
end
local gmax_problem = check_group_concurrency(ARGV[7], 'ARGV[7] group concurrency')
if gmax_problem then return bad_arg(gmax_problem) end
if type(ARGV[8]) ~= 'string' then return bad_arg('ARGV[8] reason is missing') end

local K = {
  s = KEYS[1], p = KEYS[2], r = KEYS[3], gq = KEYS[4], gw = KEYS[5], gr = KEYS[6], gc = KEYS[7], gn = KEYS[8],
  j = KEYS[9], a = KEYS[10], d = KEYS[11], e = KEYS[12], w = KEYS[13], n = KEYS[14], ev = KEYS[15],
  pg = KEYS[16], x = KEYS[17], f = KEYS[18], fw = KEYS[19], events_cap = tonumber(ARGV[9]), gmax = tonumber(ARGV[7]),
}
K.events = K.ev
local wheel_problem = wheel_keys(K, 20, 10)
if wheel_problem then return bad_arg(wheel_problem) end
local member = ARGV[1]
local cap_problem = check_events_cap(ARGV[9])
if cap_problem then return bad_arg('ARGV[9] ' .. cap_problem) end
local id = member_id(member)
local token = member_token(member)
local delay = tonumber(ARGV[2])
local dead_max_count, dead_max_age_ms = tonumber(ARGV[5]), tonumber(ARGV[6])
local now = now_ms()

local lost = lease_lost(K, member, id, now)
if lost then
  -- A resent fail (its reply was lost) finds the error it wrote, carrying its token.
  local last = redis.call('HGET', K.e, id)
  if last then
    local ok, decoded = pcall(cjson.decode, last)
    -- Not the reaper's LeaseExpired error: it carries the token of the lease it ended, and that
    -- holder's late fail must be refused, not taken for its own.
    if ok and type(decoded) == 'table' and decoded.token == token and decoded.name ~= 'LeaseExpired' then
      return { 'ALREADY', -1 }
    end
  end
  return redis.error_reply('DELAYQ_LEASE_LOST ' .. lost)
end

local rec = redis.call('HGET', K.j, id)
local h, why = nil, 'no record'
if rec then h, why = rec_parse(rec) end
if not h then return redis.error_reply('DELAYQ_BAD_RECORD ' .. tostring(why) .. ', job ' .. id) end

local retry = delay >= 0 and ARGV[4] == '0' and h.attempts < h.max
if retry and K.wi then
  local missing = wheel_missing(K, { now + delay }, nil, now)
  if missing then return missing end
end

-- The lease goes first: a removal, so a full Redis (noeviction) still lets a failure land.
redis.call('ZREM', K.a, member)
-- Progress belongs to the attempt: a retry starts from nothing, and a dead job shows its error.
redis.call('HDEL', K.pg, id)
error_table.at = now
error_table.attempt = h.attempts
error_table.token = token
if ARGV[4] == '1' then error_table.unrecoverable = true end
redis.call('HSET', K.e, id, cjson.encode(error_table))
rec = rec_with_error_flag(rec, h, true)
h = rec_parse(rec)

if retry then
  local run_at = now + delay
  redis.call('HSET', K.j, id, rec)
  announce_placed(K, place_waiting(K, id, h, run_at, now), run_at)
  redis.call('HINCRBY', K.n, 'failed', 1)
  emit(K, 'failed', id, 'attempt', h.attempts, 'retryAt', run_at, 'at', now, 'reason', ARGV[8])
  if member_group(member) then group_release_and_wake(K, member_group(member), now) end
  return { 'RETRY', run_at }
end
if member_group(member) then group_release_and_wake(K, member_group(member), now) end
emit(K, 'failed', id, 'attempt', h.attempts, 'retryAt', -1, 'at', now, 'reason', ARGV[8])
bury(K, id, rec, now, h.attempts, dead_max_count, dead_max_age_ms)
FLOW.buried(K, id, rec, now, dead_max_count, dead_max_age_ms)
return { 'DEAD', now }
