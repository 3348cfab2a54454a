-- counts: how many jobs are in each state, by the server clock.
--
-- KEYS[1] schedule, KEYS[2] active, KEYS[3] dead
-- Returns: { scheduled, due, active, dead, now, next_due or -1 }; due counts the scheduled
--          jobs whose time has come (a subset of scheduled).

--!include prelude.lua

local now = now_ms()
local head = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {
  redis.call('ZCARD', KEYS[1]),
  redis.call('ZCOUNT', KEYS[1], '-inf', now),
  redis.call('ZCARD', KEYS[2]),
  redis.call('ZCARD', KEYS[3]),
  now,
  head[2] and tonumber(head[2]) or -1,
}
