-- claim (range strategy): as claim-zpopmin.lua, for servers without ZPOPMIN
-- (before Redis 5, or with the command renamed away).
--
-- KEYS and ARGV: exactly as claim-zpopmin.lua.
-- Returns: exactly as claim-zpopmin.lua.
-- Guarantee: as claim-zpopmin.lua; each ZREM is checked, so a member that is not
--          there any more is never leased.

--!include prelude.lua
--!include events.lua
--!include wheel.lua
--!include bury.lua
--!include reap-expired.lua
--!include claim-common.lua

local function take_due(K, now, limit)
  local due = redis.call('ZRANGEBYSCORE', K.schedule, '-inf', now, 'WITHSCORES', 'LIMIT', 0, limit)
  local taken = {}
  for i = 1, #due, 2 do
    if redis.call('ZREM', K.schedule, due[i]) == 1 then
      taken[#taken + 1] = { due[i], tonumber(due[i + 1]) }
    end
  end
  return taken
end

local K, o = claim_context()
return claim({ take = take_due, head = schedule_head }, K, o)
