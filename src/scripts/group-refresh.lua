-- group-refresh: put groups back in the state their waiting jobs and running counts say under
-- the group concurrency given, and wake workers when one can run now (issue 29). Run by a worker
-- that learned of a changed bound (queue.configure): a group that was full under the old bound
-- and has a free slot under the new one goes back in turn without waiting for one of its jobs to end.
--
-- KEYS[1] gq, KEYS[2] gw, KEYS[3] gr, KEYS[4] gc   groups (groups.lua)
-- KEYS[5] w   channel: wake messages ("<due>": the earliest head that can run)
-- ARGV[1] group concurrency (>= 1), ARGV[2...] the groups (up to 1000)
-- Returns: how many of the groups can run (are in gw or gr now).
-- Cost: O(groups * log n).
-- Guarantee: the same states every other path leaves (groups.lua group_refresh): a paused group
--          stays out of turn, a full one too; nothing else is written.

--!include prelude.lua
--!include args.lua
--!include groups.lua

local gmax = tonumber(ARGV[1])
if not gmax or gmax < 1 or gmax % 1 ~= 0 then
  return bad_arg('group concurrency must be a whole number >= 1, got ' .. tostring(ARGV[1]))
end
if #ARGV - 1 > 1000 then return bad_arg('at most 1000 groups per call, got ' .. (#ARGV - 1)) end
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
