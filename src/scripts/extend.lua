-- extend: push the lease deadlines of jobs this worker holds, in one call.
--
-- KEYS[1] active    ZSET id -> lease deadline ms
-- KEYS[2] leases    HASH id -> "token|startMs|workerId"
-- ARGV[1] lease ms (new deadline = now + lease ms, unless the current one is later), then pairs: id, token
-- Returns: { now, deadline_1, deadline_2, ... } with 0 for each job whose lease was lost
--          (that job is left untouched).
-- Guarantee (fencing): an expired or foreign lease is never extended.

--!include prelude.lua
--!include lease-check.lua

local K = { active = KEYS[1], leases = KEYS[2] }
local lease_ms = tonumber(ARGV[1])
local now = now_ms()
local out = { now }
for i = 2, #ARGV, 2 do
  local id, token = ARGV[i], ARGV[i + 1]
  if check_lease(K, id, token, now) then
    out[#out + 1] = 0
  else
    -- Never shorten a lease: a handler may have asked for more than the keeper's renewal.
    local deadline = now + lease_ms
    local current = tonumber(redis.call('ZSCORE', K.active, id))
    if deadline > current then
      -- ZREM first: over maxmemory Redis refuses a script's first write if it is one that adds
      -- memory (ZADD), but not once the script has written; a lease must stay renewable then.
      redis.call('ZREM', K.active, id)
      redis.call('ZADD', K.active, deadline, id)
    else
      deadline = current
    end
    out[#out + 1] = deadline
  end
end
return out
