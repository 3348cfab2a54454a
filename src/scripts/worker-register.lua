-- worker-register: give a starting worker its holder number, or drop one at close
-- (docs/ARCHITECTURE.md §4.9). A claim block stores the 4-byte holder number, not the worker id, so a
-- record stays small; `wk` says who a number is.
--
-- KEYS[1] wk  HASH holder number -> "<worker id>|<started ms>"; field '#' = the last number issued
-- ARGV[1] 'register' or 'drop', ARGV[2] the worker id (register) or the holder number (drop)
-- Returns: register -> the new holder number (1, 2, ...); drop -> 1 when it was there, else 0.
-- Guarantee: numbers are never reused (the counter only grows), so an old claim block never
--          names a later worker.

--!include prelude.lua

if ARGV[1] == 'register' then
  if type(ARGV[2]) ~= 'string' or #ARGV[2] == 0 then
    return redis.error_reply('DELAYQ_BAD_ARG worker id is empty')
  end
  local number = redis.call('HINCRBY', KEYS[1], '#', 1)
  -- Holder numbers are a uint32 in the record.
  if number > 4294967295 then
    return redis.error_reply('DELAYQ_BAD_ARG holder numbers are used up (2^32); run trim to drop old ones')
  end
  redis.call('HSET', KEYS[1], number, ARGV[2] .. '|' .. string.format('%.0f', now_ms()))
  return number
elseif ARGV[1] == 'drop' then
  if ARGV[2] == '#' then return 0 end
  return redis.call('HDEL', KEYS[1], ARGV[2])
end
return redis.error_reply('DELAYQ_BAD_ARG operation ' .. tostring(ARGV[1]) .. ' is not register or drop')
