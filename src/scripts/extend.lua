-- extend: push the lease deadlines of jobs this worker holds, in one call (docs/ARCHITECTURE.md §4.3).
--
-- KEYS[1] a   ZSET lease member "<claims>.<claimed at>|<id>" -> deadline ms
-- ARGV[1] lease ms (new deadline = now + lease ms, unless the current one is later),
-- ARGV[2] flags: 'm' the server has ZMSCORE (Redis >= 6.2), then the lease members
-- Returns: { now, deadline_1, deadline_2, ... } with 0 for each member whose lease is not valid
--          (expired, or not in a: reaped, cancelled, acked); that member is left untouched.
-- Cost: TIME, ZMSCORE a, and ZREM a + ZADD a for the batch when any deadline moves.
-- Guarantee (fencing, docs/DESIGN.md invariant 4): an expired or foreign lease is never extended, and no
--          lease is ever shortened (a handler may have asked for more than the keeper renews).

--!include prelude.lua

local lease_ms = tonumber(ARGV[1])
if not lease_ms or lease_ms < 1 then
  return redis.error_reply('DELAYQ_BAD_ARG lease ms ' .. tostring(ARGV[1]) .. ' is not a whole number >= 1')
end
local members = {}
for i = 3, #ARGV do members[#members + 1] = ARGV[i] end
local now = now_ms()
local out = { now }
if #members == 0 then return out end

local scores
if string.find(ARGV[2] or '', 'm', 1, true) then
  scores = redis.call('ZMSCORE', KEYS[1], unpack(members))
else
  scores = {}
  for i, member in ipairs(members) do scores[i] = redis.call('ZSCORE', KEYS[1], member) end
end
local deadline = now + lease_ms
local moved, zadd = {}, {}
for i, member in ipairs(members) do
  local current = scores[i] and tonumber(scores[i])
  if not current or current <= now then
    out[#out + 1] = 0
  elseif current >= deadline then
    out[#out + 1] = current
  else
    moved[#moved + 1] = member
    zadd[#zadd + 1] = deadline
    zadd[#zadd + 1] = member
    out[#out + 1] = deadline
  end
end
-- ZREM first: over maxmemory Redis refuses a script's first write when it is one that may add
-- memory (ZADD), but not once the script has written; a lease must stay renewable then.
call_chunked('ZREM', KEYS[1], moved, 1)
call_chunked('ZADD', KEYS[1], zadd, 2)
return out
