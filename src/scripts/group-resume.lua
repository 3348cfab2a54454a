-- group-resume: let workers start jobs of a paused group again (issue 29), and wake them when the
-- group has a due job and a free slot: sleeping workers hear it on the wake channel, no polling.
--
-- KEYS[1] gq  ZSET, scores 0: "<group>\0<due: 6 bytes BE><id>" of waiting grouped jobs
-- KEYS[2] gw  ZSET groups with a free slot whose head is not due
-- KEYS[3] gr  ZSET groups with a free slot and a due head (in turn)
-- KEYS[4] gc  HASH group -> running count (+ GROUP_PAUSED while paused)
-- KEYS[5] w   channel: wake messages ("<due>": the group's head, when it can run)
-- ARGV[1] group, ARGV[2] group concurrency (the queue's recorded one; 0: unknown, and the group is
--         put in turn when it has waiting jobs: the claim, which knows the bound, checks it)
-- Returns: 1 when the group was paused and is resumed now, 0 when it was not paused. Error
--          'DELAYQ_BAD_ARG <reason>' (nothing written) for KEYS other than these 5 (of the types
--          above), a group as group-pause takes it, a group concurrency that is not 0..1000000, or
--          ARGV other than these 2 values.
-- Cost: O(log n).
-- Guarantee: the group's state (gw, gr or neither) is what its waiting jobs and running count say,
--          as after any other path that ends a lease (groups.lua group_refresh).

--!include prelude.lua
--!include args.lua
--!include groups.lua

local problem = check_key_count(5, false)
  or check_group(ARGV[1], 'ARGV[1] group')
  or check_group_concurrency(ARGV[2], 'ARGV[2] group concurrency')
  or check_arg_count(2, 'group-resume')
  -- gq gw gr, gc, w (channel)
  or check_key_types('zzzh-', false)
if problem then return bad_arg(problem) end
local K = { gq = KEYS[1], gw = KEYS[2], gr = KEYS[3], gc = KEYS[4], w = KEYS[5], gmax = tonumber(ARGV[2]) }
local g = ARGV[1]
if (tonumber(redis.call('HGET', K.gc, g)) or 0) < GROUP_PAUSED then return 0 end
local running = redis.call('HINCRBY', K.gc, g, int_text(-GROUP_PAUSED))
if running <= 0 then
  redis.call('HDEL', K.gc, g)
  running = 0
end
local now = now_ms()
local due = group_refresh(K, g, now, running)
if due then redis.call('PUBLISH', K.w, ms_text(math.max(due, now))) end
return 1
