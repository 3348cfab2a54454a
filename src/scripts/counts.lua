-- counts: how many jobs are in each state, by the server clock.
--
-- KEYS[1] schedule, KEYS[2] active, KEYS[3] dead
-- KEYS[4..6] wheel layout only: ready, wheel, wheel count
-- Returns: { scheduled, due, active, dead, now, next_due or -1 }; due counts the scheduled
--          jobs whose time has come (a subset of scheduled). Wheel layout: scheduled counts the
--          buckets' jobs (the wheel count) and ready; due counts ready (jobs of a bucket become
--          due together, when it is promoted); next_due is the earliest bucket end (or now when
--          ready holds jobs).

--!include prelude.lua

local now = now_ms()
local head = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local scheduled = redis.call('ZCARD', KEYS[1])
local due = redis.call('ZCOUNT', KEYS[1], '-inf', now)
local next_due = head[2] and tonumber(head[2]) or -1
if KEYS[4] then
  local ready = redis.call('LLEN', KEYS[4])
  scheduled = scheduled + ready + (tonumber(redis.call('GET', KEYS[6])) or 0)
  due = due + ready
  local bucket = redis.call('ZRANGE', KEYS[5], 0, 0, 'WITHSCORES')
  if bucket[2] and (next_due == -1 or tonumber(bucket[2]) < next_due) then next_due = tonumber(bucket[2]) end
  if ready > 0 then next_due = now end
end
return {
  scheduled,
  due,
  redis.call('ZCARD', KEYS[2]),
  redis.call('ZCARD', KEYS[3]),
  now,
  next_due,
}
