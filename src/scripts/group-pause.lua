-- group-pause: stop workers from starting jobs of one group, across all workers (issue 29). Its
-- running jobs go on; its waiting jobs stay waiting (and can still be cancelled or listed).
--
-- KEYS[1] gw  ZSET groups with a free slot whose head is not due
-- KEYS[2] gr  ZSET groups with a free slot and a due head (in turn)
-- KEYS[3] gc  HASH group -> running count; GROUP_PAUSED is added to it while the group is paused
-- ARGV[1] group (validated by the caller: src/job-options.ts validateGroup)
-- Returns: 1 when the group was paused by this call, 0 when it already was.
-- Cost: O(log n): HGET, HINCRBY and two ZREMs.
-- Guarantee: from this step on no claim leases a job of the group: it is out of gw and gr, and
--          its count is above any bound, so no path puts it back in turn (groups.lua) until
--          group-resume.lua takes GROUP_PAUSED off again.

--!include prelude.lua
--!include groups.lua

local K = { gw = KEYS[1], gr = KEYS[2], gc = KEYS[3] }
local g = ARGV[1]
if not g or g == '' then return redis.error_reply('DELAYQ_BAD_ARG group must be a non-empty string') end
if (tonumber(redis.call('HGET', K.gc, g)) or 0) >= GROUP_PAUSED then return 0 end
redis.call('HINCRBY', K.gc, g, int_text(GROUP_PAUSED))
redis.call('ZREM', K.gw, g)
redis.call('ZREM', K.gr, g)
return 1
