-- group-refresh: put groups back in the state their waiting jobs and running counts say under
-- the group concurrency given, and wake workers when one can run now (issue 29). Run by a worker
-- that learned of a changed bound (queue.configure): a group that was full under the old bound
-- and has a free slot under the new one goes back in turn without waiting for one of its jobs to end.
--
-- KEYS[1] gq, KEYS[2] gw, KEYS[3] gr, KEYS[4] gc   groups (groups.lua)
-- KEYS[5] w   channel: wake messages ("<due>": the earliest head that can run)
-- ARGV[1] group concurrency (>= 1), ARGV[2...] the groups (up to 1000)
-- Returns: how many of the groups can run (are in gw or gr now). Error 'DELAYQ_BAD_ARG <reason>'
--          (nothing written) for KEYS other than these 5 (of the types above), a group concurrency
--          that is not 1..1000000, no group or more than 1000, or a group as group-pause takes it.
-- Cost: O(groups * log n).
-- Guarantee: the same states every other path leaves (groups.lua group_refresh): a paused group
--          stays out of turn, a full one too; nothing else is written.

--!include prelude.lua
--!include args.lua
--!include groups.lua

local problem = check_key_count(5, false) or check_whole(ARGV[1], 'ARGV[1] group concurrency', 1, 1000000)
if not problem and (#ARGV < 2 or #ARGV > 1001) then
  problem = 'ARGV[2...] groups: 1 to 1000 per call, got ' .. (#ARGV - 1)
end
for i = 2, problem and 1 or #ARGV do
  problem = check_group(ARGV[i], 'ARGV[' .. i .. '] group')
  if problem then break end
end
-- gq gw gr, gc, w (channel)
problem = problem or check_key_types('zzzh-', false)
if problem then return bad_arg(problem) end
local gmax = tonumber(ARGV[1])
local K = { gq = KEYS[1], gw = KEYS[2], gr = KEYS[3], gc = KEYS[4], w = KEYS[5], gmax = gmax }
local now = now_ms()
local can_run, earliest = 0, nil
for i = 2, #ARGV do
  local due = group_refresh(K, ARGV[i], now)
  if due then
    can_run = can_run + 1
    if earliest == nil or due < earliest then earliest = due end
  end
end
if earliest then redis.call('PUBLISH', K.w, ms_text(math.max(earliest, now))) end
return can_run
