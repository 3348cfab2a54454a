-- cancel: cancel a job that is waiting or running, and keep it visible as cancelled (layout 2,
-- docs/ARCHITECTURE.md §4.7; issue 15).
--
-- KEYS[1] s, KEYS[2] p, KEYS[3] r   the waiting sets of the default and prioritized classes
-- KEYS[4] gq, KEYS[5] gw, KEYS[6] gr, KEYS[7] gc   groups (groups.lua)
-- KEYS[8] gn  ZSET group -> its waiting jobs (groups.lua keeps it with gq)
-- KEYS[9] j   HASH id -> record; a cancelled job keeps the cancelled record (01 8x 10, with the
--             claim block and max attempts it had: record.lua rec_final)
-- KEYS[10] a  ZSET lease member -> deadline ms
-- KEYS[11] x  ZSET id -> cancelled at ms (trimmed by trim.lua, by count and age)
-- KEYS[12] e  HASH id -> JSON of the last error (deleted: a cancelled job shows no error)
-- KEYS[13] w  channel: wake messages (`C <member>` tells a running job's holder)
-- KEYS[14] n  HASH of counters (`cancelled`)
-- KEYS[15] ev STREAM of job events (`cancelled`: always written)
-- KEYS[16] pg HASH id -> the running attempt's progress (deleted when a running job is cancelled)
-- KEYS[17] d  ZSET id -> died at ms: a flow's parent dies when a child it does not ignore is
--             cancelled (flow.lua)
-- KEYS[18] f  HASH flow bookkeeping (flow.lua)
-- KEYS[19] fw ZSET parent -> its own due ms: flow parents waiting for their children;
--             a parent waiting for its children is cancelled from fw, and its waiting children
--             (and theirs) with it
-- KEYS[20...] wheel strategy only: ready, wheel, wheel count, then bucket lists (wheel.lua);
--             with 'F' after the events cap instead: 16 keys for each other queue named (children in
--             another queue, one Redis only): s, p, r, gq, gw, gr, gc, gn, j, x, e, n, ev, f, fw, w
-- ARGV[1] id, ARGV[2] group concurrency, ARGV[3] events cap (events.lua)
-- ARGV[4...] wheel strategy only: granularity ms, then the start of each bucket list in KEYS;
--          or 'F', this queue's name, M other queues (0..16), then 3 for each: its name, group
--          concurrency and events cap, its keys in KEYS[20 + 16 * (i - 1) ...]
-- Returns: 'waiting' or 'running' when cancelled (a flow's parent: also its waiting children); 0 (an integer reply, nil in Lua clients' terms
--          false) when there is nothing to cancel (unknown, dead, completed, already cancelled, or
--          an unreadable record). Writes nothing then.
--          { 'needs', queue, ... } (nothing written): the job is a flow's parent with children
--          (or theirs) in those queues, not passed with 'F': call again with their keys too.
--          Error 'DELAYQ_BAD_ARG <reason>' (nothing written) for a KEYS count other than 19 (22 or
--          more with the wheel, 19 + 16 per other queue with 'F'), an id that is missing, empty, over 1536 bytes, with a control
--          character or not UTF-8, a group concurrency that is not 0..1000000, an events cap that
--          is not a whole number, or wheel arguments that do not match the wheel KEYS.
-- ACL: cancelling a waiting job only reads a and never touches pg (a waiting job has no progress:
-- it is deleted when an attempt ends), so a producer whose rules make the lease and progress keys
-- read-only can still cancel waiting jobs (docs/SECURITY.md).
-- Cost: O(log n); wheel strategy: O(length of the job's bucket) (LREM).
-- Guarantee (docs/DESIGN.md invariant 8, cancelled is final): a running job's lease member goes in this
--          one step, so its holder's late ack or fail is refused (`LOST cancelled`), the reaper,
--          which works from `a`, never sees it, and no claim or dead.retry can take it (it is in
--          no waiting set and not in `d`). The holder learns it from `C <member>`, not by polling.

--!include prelude.lua
--!include events.lua
--!include record.lua
--!include wheel.lua
--!include place.lua
--!include bury.lua
--!include flow.lua
--!include args.lua

-- Every check before the first write (docs/DESIGN.md invariant 10): a key or argument left out
-- failed a command after the lease member was removed, leaving the job in no set (issue 32).
local key_problem = check_key_count(19, true)
if key_problem then return bad_arg(key_problem) end
local id_problem = check_id(ARGV[1], 'ARGV[1] id')
if id_problem then return bad_arg(id_problem) end
local gmax_problem = check_group_concurrency(ARGV[2], 'ARGV[2] group concurrency')
if gmax_problem then return bad_arg(gmax_problem) end

local K = {
  s = KEYS[1], p = KEYS[2], r = KEYS[3], gq = KEYS[4], gw = KEYS[5], gr = KEYS[6], gc = KEYS[7], gn = KEYS[8],
  j = KEYS[9], a = KEYS[10], x = KEYS[11], e = KEYS[12], w = KEYS[13], n = KEYS[14], ev = KEYS[15],
  pg = KEYS[16], d = KEYS[17], f = KEYS[18], fw = KEYS[19], events_cap = tonumber(ARGV[3]), gmax = tonumber(ARGV[2]),
}
K.events = K.ev
-- The other queues a flow's children may be in (K.Q, flow.lua), or the wheel's keys.
if ARGV[4] == 'F' then
  local m = tonumber(ARGV[6])
  if type(ARGV[5]) ~= 'string' or ARGV[5] == '' or not whole_ms(ARGV[6]) or m > 16 then
    return bad_arg("ARGV[5] queue name and ARGV[6] count of other queues (0..16) must follow 'F'")
  end
  if #KEYS ~= 19 + 16 * m or #ARGV ~= 6 + 3 * m then
    return bad_arg('KEYS has ' .. #KEYS .. ' keys and ARGV ' .. #ARGV .. ' values; ' .. m .. ' other queues need ' .. (19 + 16 * m) .. ' and ' .. (6 + 3 * m))
  end
  K.Q = { [ARGV[5]] = K }
  for i = 1, m do
    local at, base = 6 + 3 * (i - 1), 19 + 16 * (i - 1)
    local problem = check_group_concurrency(ARGV[at + 2], 'ARGV[' .. (at + 2) .. '] group concurrency')
      or (check_events_cap(ARGV[at + 3]) and 'ARGV[' .. (at + 3) .. '] ' .. check_events_cap(ARGV[at + 3]))
    if problem then return bad_arg(problem) end
    K.Q[ARGV[at + 1]] = {
      s = KEYS[base + 1], p = KEYS[base + 2], r = KEYS[base + 3], gq = KEYS[base + 4], gw = KEYS[base + 5],
      gr = KEYS[base + 6], gc = KEYS[base + 7], gn = KEYS[base + 8], j = KEYS[base + 9], x = KEYS[base + 10],
      e = KEYS[base + 11], n = KEYS[base + 12], ev = KEYS[base + 13], events = KEYS[base + 13], f = KEYS[base + 14],
      fw = KEYS[base + 15], w = KEYS[base + 16], gmax = tonumber(ARGV[at + 2]), events_cap = tonumber(ARGV[at + 3]),
    }
  end
else
  local wheel_problem = wheel_keys(K, 20, 4)
  if wheel_problem then return bad_arg(wheel_problem) end
end
local cap_problem = check_events_cap(ARGV[3])
if cap_problem then return bad_arg('ARGV[3] ' .. cap_problem) end
local id = ARGV[1]
local now = now_ms()
local rec = redis.call('HGET', K.j, id)
if not rec then return 0 end
local h = rec_parse(rec)
if not h or h.completed or h.cancelled then return 0 end

local how
local flow = FLOW.member(rec)
if flow then
  -- Children in other queues whose keys were not passed: asked for before anything is written.
  local missing = FLOW.queues_missing(K, id)
  if #missing > 0 then
    table.insert(missing, 1, 'needs')
    return missing
  end
end
local member = h.claims and h.claims > 0 and rec_member(h, id) or nil
if member and redis.call('ZSCORE', K.a, member) then
  -- Running (or its lease expired and is not reaped yet): the lease goes first, a removal.
  redis.call('ZREM', K.a, member)
  redis.call('HDEL', K.pg, id)
  -- A grouped job's slot is free again; its group's next job can start.
  local group = member_group(member)
  if group then group_release_and_wake(K, group, now) end
  how = 'running'
else
  if K.wi then
    local missing = wheel_missing(K, {}, { id }, now)
    if missing then return missing end
  end
  -- A dead job is in no waiting set, so unplace finds nothing to remove; a flow's parent waiting
  -- for its children is in fw.
  if not (flow and redis.call('ZREM', K.fw, id) == 1) and not unplace_waiting(K, id, h) then return 0 end
  how = 'waiting'
end
-- The claim block and max attempts stay: get() shows the attempts used and the last run's due.
redis.call('HSET', K.j, id, rec_final(rec, h, REC_B_CANCELLED))
redis.call('ZADD', K.x, now, id)
redis.call('HDEL', K.e, id)
redis.call('HINCRBY', K.n, 'cancelled', 1)
if how == 'running' then redis.call('PUBLISH', K.w, 'C ' .. member) end
emit(K, 'cancelled', id, 'at', now, 'was', how)
if flow then
  -- Its waiting children go with it; then, as a child, its parent hears (no dead-set trim here:
  -- the next burial or trim.lua does it).
  FLOW.cancel_children(K, id, now)
  FLOW.ended(K, id, 'cancelled', nil, now, 0, 0)
end
return how
