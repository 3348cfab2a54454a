-- progress: record a running job's progress value, for its lease holder only.
--
-- KEYS[1] active    ZSET id -> lease deadline ms
-- KEYS[2] leases    HASH id -> "token|startMs|workerId"
-- KEYS[3] progress  HASH id -> the running job's last progress value (JSON)
-- ARGV[1] id, ARGV[2] token, ARGV[3] value (JSON, already checked by the caller),
-- ARGV[4] cap bytes (the longest value accepted)
-- Returns: 1 when written; error 'DELAYQ_LEASE_LOST <why>' when the token holds no valid lease
--          (expired, reaped, claimed by another worker, job ended); error 'DELAYQ_BAD_ARG <reason>'
--          when the value is empty or over the cap. Any error means nothing was written.
-- Guarantee (fencing): only the holder of a valid lease writes; a holder that lost its lease
--          cannot overwrite the progress of the job's next attempt. The value is deleted by every
--          script that ends the attempt (ack, fail, reap, release, cancel), so it never outlives it.

--!include prelude.lua
--!include lease-check.lua
--!include args.lua

local K = { active = KEYS[1], leases = KEYS[2], progress = KEYS[3] }
local id, token, value = ARGV[1], ARGV[2], ARGV[3]
if not whole_ms(ARGV[4]) then return bad_arg('cap ' .. tostring(ARGV[4]) .. ' is not a whole number') end
-- Callers in other languages have no TypeScript check in front of them: the cap holds here too.
if #value == 0 or #value > tonumber(ARGV[4]) then
  return bad_arg('progress value is ' .. #value .. ' bytes; it must be 1 to ' .. ARGV[4])
end
local lost = check_lease(K, id, token, now_ms())
if lost then return redis.error_reply('DELAYQ_LEASE_LOST ' .. lost) end
redis.call('HSET', K.progress, id, value)
return 1
