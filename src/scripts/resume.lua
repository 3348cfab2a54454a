-- resume: let the workers of a paused queue (or partition) claim again, and wake them all.
--
-- KEYS[1] paused    STRING present while paused
-- KEYS[2] wake      channel of wake messages
-- KEYS[3] schedule  ZSET id -> due ms (for the head named in the message)
-- Returns: { now, 1 when this call resumed a paused queue or 0 when it was not paused }
-- Guarantee: the message `R <head>` (head: the schedule's earliest due time, -1 when empty) goes
--          to every worker, paused or not, so due jobs start at once. Jobs that fell due during
--          the pause keep their due time: their lateness shows the pause.

--!include prelude.lua

local now = now_ms()
local removed = redis.call('DEL', KEYS[1])
local head = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
redis.call('PUBLISH', KEYS[2], 'R ' .. (head[2] or '-1'))
return { now, removed }
