-- reap: end the leases whose deadline has passed (their worker crashed, hung or was cut off):
-- each job goes back to waiting, due now, or to the dead set (LeaseExpired) once its attempts
-- are spent (layout 2, docs/ARCHITECTURE.md §4.6). Any worker may run it, any time.
--
-- KEYS[1] s, KEYS[2] p, KEYS[3] r   the waiting sets of the default and prioritized classes
-- KEYS[4] gq, KEYS[5] gw, KEYS[6] gr, KEYS[7] gc   groups (groups.lua): reaped grouped jobs wait
--             in gq again, and their groups' running slots are freed
-- KEYS[8] gn  ZSET group -> its waiting jobs (groups.lua keeps it with gq)
-- KEYS[9] j   HASH id -> record
-- KEYS[10] a   ZSET lease member -> deadline ms
-- KEYS[11] d  ZSET id -> died at ms
-- KEYS[12] e  HASH id -> JSON of the last error
-- KEYS[13] w  channel: wake messages
-- KEYS[14] n  HASH of counters (`reaped`, `dead`)
-- KEYS[15] ev STREAM of job events (`lease-lost`, `dead`: always written)
-- KEYS[16] pg HASH id -> the running attempt's progress (deleted: the attempt ended)
-- KEYS[17] f  HASH flow bookkeeping (flow.lua)
-- KEYS[18] fw ZSET parent -> its own due ms: flow parents waiting for their children;
--             a flow member's burial ends it for its parent
-- KEYS[19..21] wheel strategy only: ready, wheel, wheel count (wheel.lua)
-- ARGV[1] max jobs this call, ARGV[2] dead max count, ARGV[3] dead max age ms, ARGV[4] group
-- concurrency, ARGV[5] events cap (events.lua), ARGV[6] wheel strategy only: granularity ms
-- Returns: { returned, buried, next deadline or -1 }
-- Guarantee: idempotent; a lease ends here only once its deadline has passed by the server clock,
--          and every reaped lease leaves its error in e and a `lease-lost` event (invariant 5).

--!include prelude.lua
--!include events.lua
--!include record.lua
--!include wheel.lua
--!include place.lua
--!include bury.lua
--!include flow.lua
--!include lease-check.lua
--!include reap-expired.lua
--!include args.lua

-- Checks before the first write (docs/DESIGN.md invariant 10).
if #KEYS ~= 18 and #KEYS ~= 21 then return bad_arg('KEYS has ' .. #KEYS .. ' keys; reap takes 18 (21 with the wheel: wr, wi, wc)') end
local REAP_ARGS = { 'max jobs', 'dead max count', 'dead max age ms' }
for i = 1, 3 do
  if not whole_ms(ARGV[i]) or #ARGV[i] > 15 then
    return bad_arg('ARGV[' .. i .. '] ' .. REAP_ARGS[i] .. ' ' .. tostring(ARGV[i]) .. ' is not a whole number >= 0 (digits only)')
  end
end
local gmax_problem = check_group_concurrency(ARGV[4], 'ARGV[4] group concurrency')
if gmax_problem then return bad_arg(gmax_problem) end

local K = {
  s = KEYS[1], p = KEYS[2], r = KEYS[3], gq = KEYS[4], gw = KEYS[5], gr = KEYS[6], gc = KEYS[7], gn = KEYS[8],
  j = KEYS[9], a = KEYS[10], d = KEYS[11], e = KEYS[12], w = KEYS[13], n = KEYS[14], ev = KEYS[15],
  pg = KEYS[16], f = KEYS[17], fw = KEYS[18], events_cap = tonumber(ARGV[5]), gmax = tonumber(ARGV[4]),
}
K.events = K.ev
local wheel_problem = wheel_keys(K, 19, 6)
if wheel_problem then return bad_arg(wheel_problem) end
local cap_problem = check_events_cap(ARGV[5])
if cap_problem then return bad_arg(cap_problem) end
local now = now_ms()
local returned, buried = reap_expired(K, now, tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]))
-- Returned jobs are due now: sleeping workers hear it (the wheel's ready list wakes them itself).
if (returned > 0 or buried > 0) and not K.wi then redis.call('PUBLISH', K.w, string.format('%.0f', now)) end
local next_deadline = -1
local head = redis.call('ZRANGE', K.a, 0, 0, 'WITHSCORES')
if head[2] then next_deadline = tonumber(head[2]) end
return { returned, buried, next_deadline }
