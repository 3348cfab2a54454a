-- resume: let the workers of a paused queue (or partition) claim again, and wake them all
-- (layout 2, docs/ARCHITECTURE.md §4.8).
--
-- KEYS[1] z   STRING present while paused
-- KEYS[2] w   channel of wake messages
-- KEYS[3] s   ZSET id -> due ms: waiting jobs of the default class
-- KEYS[4] p   ZSET "<prio>:<id>" -> due ms: waiting prioritized jobs, not yet due
-- KEYS[5] r   ZSET of due prioritized jobs
-- KEYS[6] gw  ZSET group -> due ms of its head (issue 16; empty until groups are built)
-- KEYS[7] wr  LIST of due ids, wheel strategy only (absent: the zset strategies)
-- Returns: { now, 1 when this call resumed a paused queue or 0 when it was not paused, head }.
--          Error 'DELAYQ_BAD_ARG <reason>' (nothing written) for KEYS other than 6 or 7, a key of
--          another type than the one above, or any ARGV.
-- Guarantee: the message `R <head>` goes to every worker, paused or not, so due jobs start at
--          once; head is the earliest due time of any waiting job (now when due jobs wait), -1
--          when nothing waits (the wheel's buckets are not looked at: `-1` then only means no
--          job is due yet, and workers look at the wheel themselves). Jobs that fell due during
--          the pause keep their due time: their lateness shows the pause.

--!include prelude.lua
--!include args.lua

if #KEYS ~= 6 and #KEYS ~= 7 then return bad_arg('KEYS has ' .. #KEYS .. ' keys; resume takes 6 (7 with the wheel: wr)') end
-- z, w (channel), s p r gw, wr: the heads are read after the DEL, so a key of another type must
-- be found before it.
local problem = check_key_types('s-zzzzl', false) or check_arg_count(0, 'resume')
if problem then return bad_arg(problem) end
local now = now_ms()
local removed = redis.call('DEL', KEYS[1])
local head = nil
local function sooner(at)
  if at and (head == nil or at < head) then head = at end
end
for _, key in ipairs({ KEYS[3], KEYS[4], KEYS[6] }) do
  local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  sooner(tonumber(first[2]))
end
if redis.call('EXISTS', KEYS[5]) == 1 or (KEYS[7] and redis.call('LLEN', KEYS[7]) > 0) then
  sooner(now)
end
local message = head and string.format('%.0f', head) or '-1'
redis.call('PUBLISH', KEYS[2], 'R ' .. message)
return { now, removed, head or -1 }
