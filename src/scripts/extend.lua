-- extend: push the lease deadlines of jobs this worker holds, in one call (docs/ARCHITECTURE.md §4.3).
--
-- KEYS[1] a   ZSET lease member "<claims>.<claimed at>|<id>" -> deadline ms
-- ARGV[1] lease ms (new deadline = now + lease ms, unless the current one is later),
-- ARGV[2] flags, always present: '' or 'm' (the server has ZMSCORE, Redis >= 6.2),
-- ARGV[3...] the lease members
-- Returns: { now, deadline_1, deadline_2, ... } with 0 for each member whose lease is not valid
--          (expired, or not in a: reaped, cancelled, acked); that member is left untouched.
--          Error 'DELAYQ_BAD_ARG <reason>' (nothing written) for KEYS other than one key, a lease
--          ms that is not a whole number >= 1, flags other than '' or 'm', or a value that is not a
--          lease member.
-- Cost: TIME, ZMSCORE a, and ZREM a + ZADD a for the batch when any deadline moves.
-- Guarantee (fencing, docs/DESIGN.md invariant 4): an expired or foreign lease is never extended, and no
--          lease is ever shortened (a handler may have asked for more than the keeper renews).

--!include prelude.lua
--!include args.lua

-- Checks first (docs/DESIGN.md invariant 10). The flags value is required, even empty: a call
-- without it (lease ms, then members) once read the first member as flags and extended nothing,
-- silently (issue 32); now such a call is refused, naming ARGV[2].
local key_problem = check_key_count(1, false)
if key_problem then return bad_arg(key_problem) end
if not whole_ms(ARGV[1]) or #ARGV[1] > 10 or tonumber(ARGV[1]) < 1 then
  return bad_arg('ARGV[1] lease ms ' .. tostring(ARGV[1]) .. ' is not a whole number 1..9999999999 (digits only)')
end
local lease_ms = tonumber(ARGV[1])
if ARGV[2] ~= '' and ARGV[2] ~= 'm' then
  return bad_arg('ARGV[2] flags ' .. tostring(ARGV[2]) .. ' is not \'\' or \'m\' (the flags value comes before the members, even when empty)')
end
local members = {}
for i = 3, #ARGV do
  local problem = check_member(ARGV[i], 'ARGV[' .. i .. '] lease member')
  if problem then return bad_arg(problem) end
  members[#members + 1] = ARGV[i]
end
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
