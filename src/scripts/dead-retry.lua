-- dead-retry: move dead jobs back to waiting, due now, with their attempts reset (layout 2,
-- docs/ARCHITECTURE.md §4.9).
--
-- KEYS[1] d   ZSET id -> died at ms
-- KEYS[2] j   HASH id -> record (a dead job keeps its whole record)
-- KEYS[3] e   HASH id -> JSON of the last error (kept: get() still shows why it died)
-- KEYS[4] s, KEYS[5] p, KEYS[6] r   the waiting sets of the default and prioritized classes
-- KEYS[7] gq, KEYS[8] gw, KEYS[9] gr, KEYS[10] gc   groups (groups.lua)
-- KEYS[11] gn  ZSET group -> its waiting jobs (groups.lua keeps it with gq)
-- KEYS[12] w  channel: wake messages
-- KEYS[13] ev STREAM of job events (`retried`: routine, written only with events 'all')
-- KEYS[14] n  HASH of counters (`retried`: dead jobs put back)
-- KEYS[15..17] wheel strategy only: ready, wheel, wheel count (wheel.lua)
-- ARGV[1] id, or '' for the oldest dead jobs; ARGV[2] max jobs this call (with ''), ARGV[3] group
-- concurrency, ARGV[4] events cap (events.lua), ARGV[5] wheel strategy only: granularity ms
-- Returns: how many jobs were moved. A dead job whose record is missing or cannot be read stays
--          dead (there is nothing this version could run); it is not counted.
-- Guarantee: a moved job is in exactly one waiting set and no longer in d; its claim count is
--          kept, so the tokens of its next claims differ from every earlier one (§3.4).

--!include prelude.lua
--!include events.lua
--!include record.lua
--!include wheel.lua
--!include place.lua
--!include wake.lua
--!include args.lua

-- Checks before the first write (docs/DESIGN.md invariant 10).
if #KEYS ~= 14 and #KEYS ~= 17 then return bad_arg('KEYS has ' .. #KEYS .. ' keys; dead-retry takes 14 (17 with the wheel: wr, wi, wc)') end
if ARGV[1] ~= '' then
  local id_problem = check_id(ARGV[1], 'ARGV[1] id')
  if id_problem then return bad_arg(id_problem) end
end
if ARGV[1] == '' and (not whole_ms(ARGV[2]) or #ARGV[2] > 9 or tonumber(ARGV[2]) < 1) then
  return bad_arg('ARGV[2] max jobs ' .. tostring(ARGV[2]) .. ' is not a whole number >= 1')
end
local gmax_problem = check_group_concurrency(ARGV[3], 'ARGV[3] group concurrency')
if gmax_problem then return bad_arg(gmax_problem) end

local K = {
  d = KEYS[1], j = KEYS[2], e = KEYS[3], s = KEYS[4], p = KEYS[5], r = KEYS[6], gq = KEYS[7],
  gw = KEYS[8], gr = KEYS[9], gc = KEYS[10], gn = KEYS[11], w = KEYS[12], ev = KEYS[13], n = KEYS[14], events_cap = tonumber(ARGV[4]),
  gmax = tonumber(ARGV[3]),
}
K.events = K.ev
local wheel_problem = wheel_keys(K, 15, 5)
if wheel_problem then return bad_arg(wheel_problem) end
local cap_problem = check_events_cap(ARGV[4])
if cap_problem then return bad_arg(cap_problem) end
local ids
if ARGV[1] ~= '' then
  ids = { ARGV[1] }
else
  if not whole_ms(ARGV[2]) or tonumber(ARGV[2]) < 1 then
    return bad_arg('max jobs ' .. tostring(ARGV[2]) .. ' is not a whole number >= 1')
  end
  ids = redis.call('ZRANGE', K.d, 0, tonumber(ARGV[2]) - 1)
end
if #ids == 0 then return 0 end
local now = now_ms()
local recs = redis.call('HMGET', K.j, unpack(ids))
local moved, placed = 0, nil
for i, id in ipairs(ids) do
  local rec = recs[i]
  local h = rec and rec_parse(rec)
  if h and not h.completed and not h.cancelled and redis.call('ZREM', K.d, id) == 1 then
    if h.attempts > 0 then
      rec = rec_claimed(rec, h, 0, h.claims, h.claimed_at, h.run_due, h.holder)
      h = rec_parse(rec)
    end
    redis.call('HSET', K.j, id, rec)
    -- All are due now: one message says it for the whole batch.
    placed = place_waiting(K, id, h, now, now) or placed
    emit(K, 'retried', id, 'runAt', now, 'at', now)
    moved = moved + 1
  end
end
announce_placed(K, placed, now)
if moved > 0 then redis.call('HINCRBY', K.n, 'retried', moved) end
return moved
