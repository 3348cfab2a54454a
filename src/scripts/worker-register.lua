-- worker-register: give a starting worker its holder number, or drop one at close
-- (docs/ARCHITECTURE.md §4.9). A claim block stores the 4-byte holder number, not the worker id, so a
-- record stays small; `wk` says who a number is.
--
-- KEYS[1] wk  HASH holder number -> "<worker id>|<started ms>"; field '#' = the last number issued
-- ARGV[1] 'register' or 'drop', ARGV[2] the worker id (register) or the holder number (drop)
-- Returns: register -> the new holder number (1, 2, ...); drop -> 1 when it was there, else 0.
--          Error 'DELAYQ_BAD_ARG <reason>' (nothing written) for KEYS other than one key, an
--          operation other than register or drop, a worker id that is empty, over 1024 bytes,
--          with a control character or not UTF-8, or a holder number that is not 1..2^32 - 1.
-- Guarantee: numbers are never reused (the counter only grows), so an old claim block never
--          names a later worker.

--!include prelude.lua
--!include args.lua

if #KEYS ~= 1 then return bad_arg('KEYS has ' .. #KEYS .. ' keys; this script takes 1') end
if ARGV[1] == 'register' then
  local worker_id = ARGV[2]
  if type(worker_id) ~= 'string' or #worker_id == 0 then return bad_arg('ARGV[2] worker id is missing or empty') end
  if #worker_id > 1024 or string.find(worker_id, '%c') or utf8_problem(worker_id) then
    return bad_arg('ARGV[2] worker id must be 1..1024 bytes of UTF-8 without control characters')
  end
  -- Read, check, then write: holder numbers are a uint32 in the record.
  local last = tonumber(redis.call('HGET', KEYS[1], '#') or '0')
  if not last or last >= 4294967295 then
    return bad_arg('holder numbers are used up (2^32); run trim to drop old ones')
  end
  local number = redis.call('HINCRBY', KEYS[1], '#', 1)
  redis.call('HSET', KEYS[1], number, worker_id .. '|' .. string.format('%.0f', now_ms()))
  return number
elseif ARGV[1] == 'drop' then
  if type(ARGV[2]) ~= 'string' or not string.find(ARGV[2], '^[1-9]%d*$') or #ARGV[2] > 10 then
    return bad_arg('ARGV[2] holder number ' .. tostring(ARGV[2]) .. ' is not a whole number 1..4294967295')
  end
  return redis.call('HDEL', KEYS[1], ARGV[2])
end
return bad_arg('ARGV[1] operation ' .. tostring(ARGV[1]) .. ' is not register or drop')
