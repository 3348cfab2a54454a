-- progress: record a running job's progress value, for its lease holder only (layout 2,
-- docs/ARCHITECTURE.md §4.11; issue 15).
--
-- KEYS[1] a   ZSET lease member "<claims>.<claimed at>|<id>" -> deadline ms
-- KEYS[2] pg  HASH id -> the running attempt's last progress value (JSON)
-- KEYS[3] x   ZSET id -> cancelled at ms (only read: the reason a cancelled job's holder gets)
-- ARGV[1] lease member, ARGV[2] value (JSON, already checked by the caller), ARGV[3] cap bytes
-- (the longest value accepted)
-- Returns: 1 when written; error 'DELAYQ_LEASE_LOST <why>' when the member holds no valid lease
--          (why: cancelled, expired, not held); error 'DELAYQ_BAD_ARG <reason>' when the value
--          is missing, empty or over the cap, the member or cap is malformed, or KEYS is not 3. Any error means nothing was written.
-- Guarantee (fencing): only the holder of a valid lease writes, so a holder that lost its lease
--          cannot overwrite the progress of the job's next attempt. Every script that ends the
--          attempt (ack, fail, reap, release, cancel) deletes the value, so it never outlives it.

--!include prelude.lua
--!include record.lua
--!include lease-check.lua
--!include args.lua

local key_problem = check_key_count(3, false)
if key_problem then return bad_arg(key_problem) end
local K = { a = KEYS[1], pg = KEYS[2], x = KEYS[3] }
local member, value = ARGV[1], ARGV[2]
local member_problem = check_member(member, 'ARGV[1] lease member')
if member_problem then return bad_arg(member_problem) end
if type(value) ~= 'string' then return bad_arg('ARGV[2] value is missing') end
if not whole_ms(ARGV[3]) or #ARGV[3] > 9 then return bad_arg('ARGV[3] cap ' .. tostring(ARGV[3]) .. ' is not a whole number of bytes') end
-- Callers in other languages have no TypeScript check in front of them: the cap holds here too.
if #value == 0 or #value > tonumber(ARGV[3]) then
  return bad_arg('ARGV[2] progress value is ' .. #value .. ' bytes; it must be 1 to ' .. ARGV[3])
end
local id = member_id(member)
local lost = lease_lost(K, member, id, now_ms())
if lost then return redis.error_reply('DELAYQ_LEASE_LOST ' .. lost) end
redis.call('HSET', K.pg, id, value)
return 1
