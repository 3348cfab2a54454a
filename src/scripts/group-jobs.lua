-- group-jobs: a page of one group's waiting or running jobs, with what a view shows of each, in
-- list.lua's reply shape (issue 29: queue.list(state, { group })).
--
-- KEYS[1] j   HASH id -> record
-- KEYS[2] gq  ZSET, scores 0: "<group>\0<due: 6 bytes BE><id>" of waiting grouped jobs
-- KEYS[3] a   ZSET lease member "<claims>.<claimed at>|<id>[\0<group>]" -> deadline ms
-- KEYS[4] e   HASH id -> JSON of the last error
-- KEYS[5] wk  HASH holder number -> "<worker id>|<started ms>"
-- KEYS[6] pg  HASH id -> the running job's last progress
-- ARGV[1] state: 'waiting' or 'active', ARGV[2] group, ARGV[3] offset, ARGV[4] limit (1..10000)
-- Returns: a flat array, 7 per job as list.lua: id, record, score (waiting: due; active: lease
--          deadline), last error or false, holder or false, progress or false, lease member or
--          false. Waiting jobs in due order; running ones by lease deadline.
-- Cost: waiting: O(log n + offset + limit) (the group's jobs are one lex range of gq); active:
--          O(running jobs of the queue), as lease members are ordered by deadline, not by group.
--          Error 'DELAYQ_BAD_ARG <reason>' for KEYS other than these 6, a state other than waiting
--          or active, a group as group-pause takes it, an offset that is not a whole number, a
--          limit not 1..10000, or ARGV other than these 4 values.
-- Guarantee: read-only.

--!include prelude.lua
--!include args.lua
--!include record.lua
--!include job-rows.lua
--!include groups.lua

local problem = check_key_count(6, false)
  or ARGV[1] ~= 'waiting' and ARGV[1] ~= 'active' and 'ARGV[1] state ' .. tostring(ARGV[1]) .. ' is not waiting or active'
  or check_group(ARGV[2], 'ARGV[2] group')
  or check_whole(ARGV[3], 'ARGV[3] offset', 0, 2 ^ 53 - 1)
  or check_whole(ARGV[4], 'ARGV[4] limit', 1, 10000)
  or check_arg_count(4, 'group-jobs')
if problem then return bad_arg(problem) end
local j, gq, a, e, wk, pg = unpack(KEYS, 1, 6)
local state, g = ARGV[1], ARGV[2]
local offset, limit = tonumber(ARGV[3]), tonumber(ARGV[4])

local ids, scores, members = {}, {}, {}
if state == 'waiting' then
  local from, to = group_range(g)
  for _, member in ipairs(redis.call('ZRANGEBYLEX', gq, from, to, 'LIMIT', offset, limit)) do
    ids[#ids + 1] = group_member_id(g, member)
    scores[#ids] = string.format('%.0f', group_member_due(g, member))
    members[#ids] = false
  end
else
  local suffix = '\0' .. g
  local seen = 0
  local leases = redis.call('ZRANGE', a, 0, -1, 'WITHSCORES')
  for i = 1, #leases, 2 do
    local member = leases[i]
    if #ids >= limit then break end
    if string.sub(member, -#suffix) == suffix then
      seen = seen + 1
      if seen > offset then
        ids[#ids + 1] = member_id(member)
        scores[#ids] = leases[i + 1]
        members[#ids] = member
      end
    end
  end
end

return job_rows({ j = j, e = e, wk = wk, pg = pg }, ids, scores, members, state == 'active')
