-- layout: record the queue's layout at first use, or check that it matches the stored one.
-- Producers and workers must agree: a job written into the zset layout is never seen by a wheel
-- worker, and the other way round.
--
-- KEYS[1] layout    STRING 'zset' or 'wheel:<granularity ms>'
-- KEYS[2] schedule  ZSET (zset layout's waiting jobs)
-- KEYS[3] ready     LIST (wheel layout's due jobs)
-- KEYS[4] wheel     ZSET (wheel layout's bucket index)
-- ARGV[1] the layout the caller uses, or '' to adopt the stored one ('zset' when none is stored;
--         nothing is written then)
-- Returns: { stored layout, now }; or error 'DELAYQ_LAYOUT_MISMATCH <stored>' when the stored
--          layout (or, with none stored yet, jobs already waiting in the other layout) differs
--          from ARGV[1]. Nothing is written then.

--!include prelude.lua

local wanted = ARGV[1]
local stored = redis.call('GET', KEYS[1])
if not stored then
  -- Adopting with nothing stored: the schedule ZSET, written down by whoever first asks for a layout.
  if wanted == '' then return { 'zset', now_ms() } end
  -- A queue used before layouts were recorded: its jobs say which layout it has.
  local has_zset = redis.call('ZCARD', KEYS[2]) > 0
  local has_wheel = redis.call('LLEN', KEYS[3]) > 0 or redis.call('ZCARD', KEYS[4]) > 0
  if wanted == 'zset' and has_wheel then return redis.error_reply('DELAYQ_LAYOUT_MISMATCH wheel') end
  if wanted ~= 'zset' and has_zset then return redis.error_reply('DELAYQ_LAYOUT_MISMATCH zset') end
  -- pcall: over maxmemory Redis refuses the SET, and a worker must still be able to start (and
  -- drain a full queue). Unrecorded, the layout is recorded by the next caller that can.
  redis.pcall('SET', KEYS[1], wanted)
  stored = wanted
elseif wanted ~= '' and stored ~= wanted then
  return redis.error_reply('DELAYQ_LAYOUT_MISMATCH ' .. stored)
end
return { stored, now_ms() }
