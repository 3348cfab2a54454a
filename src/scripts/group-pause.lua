-- group-pause: stop workers from starting jobs of one group, across all workers (issue 29). Its
-- running jobs go on; its waiting jobs stay waiting (and can still be cancelled or listed).
--
-- KEYS[1] gw  ZSET groups with a free slot whose head is not due
-- KEYS[2] gr  ZSET groups with a free slot and a due head (in turn)
-- KEYS[3] gc  HASH group -> running count; GROUP_PAUSED is added to it while the group is paused
-- ARGV[1] group (also validated by the caller: src/job-options.ts validateGroup)
-- Returns: 1 when the group was paused by this call, 0 when it already was. Error 'DELAYQ_BAD_ARG
--          <reason>' (nothing written) for KEYS other than these 3 (of the types above), a group
--          that is empty, over 255 bytes, with a control character or not UTF-8, or more ARGV.
-- Cost: O(log n): HGET, HINCRBY and two ZREMs.
-- Guarantee: from this step on no claim leases a job of the group: it is out of gw and gr, and
--          its count is above any bound, so no path puts it back in turn (groups.lua) until
--          group-resume.lua takes GROUP_PAUSED off again.

--!include prelude.lua
--!include args.lua
--!include groups.lua

local problem = check_key_count(3, false)
  or check_group(ARGV[1], 'ARGV[1] group')
  or check_arg_count(1, 'group-pause')
  or check_key_types('zzh', false)
if problem then return bad_arg(problem) end
local K = { gw = KEYS[1], gr = KEYS[2], gc = KEYS[3] }
local g = ARGV[1]
if (tonumber(redis.call('HGET', K.gc, g)) or 0) >= GROUP_PAUSED then return 0 end
redis.call('HINCRBY', K.gc, g, int_text(GROUP_PAUSED))
redis.call('ZREM', K.gw, g)
redis.call('ZREM', K.gr, g)
return 1
