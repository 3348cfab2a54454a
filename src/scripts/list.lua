-- list: a page of one state's jobs with what a view shows of each, read in one atomic step
-- (docs/ARCHITECTURE.md §4.9), so a page never mixes two moments.
--
-- KEYS[1] j   KEYS[2] s   KEYS[3] p   KEYS[4] r   KEYS[5] a   KEYS[6] c   KEYS[7] x   KEYS[8] d
-- KEYS[9] e   KEYS[10] wk KEYS[11] pg
-- KEYS[12..14] state 'ids' only: the wheel's wr, wi, wc (wheel.lua), for the due times
-- KEYS[12] state 'waiting' only, optional: gq (waiting grouped jobs; the wheel has no groups)
-- KEYS[12] state 'waiting-children' only: fw (flow parents waiting for their children)
-- ARGV[1] state: 'waiting', 'active', 'completed', 'cancelled', 'dead', 'waiting-children', or
--         'ids' (ARGV[6..] are the ids to show: the wheel's waiting jobs, which live in bucket
--         lists the caller read)
-- ARGV[2] offset, ARGV[3] limit, ARGV[4] 1: newest first (by score), 0: earliest first
-- ARGV[5] state 'ids' only: the wheel's granularity ms
-- Returns: a flat array, 7 per job: id, record, score, last error (JSON) or false,
--          holder ("<worker id>|<started ms>") or false, progress or false, lease member or false.
--          score: waiting, waiting-children: due (a parent's own due time); active: lease
--          deadline; completed, cancelled, dead: when. A job whose record is gone (trimmed between the reads of a caller
--          merging partitions) is left out.
-- Order of 'waiting': the due prioritized jobs first (r, in claim order: priority, then due),
--          then the others (s and p) by due time, then the grouped jobs (gq) by group and due
--          time. Deep pages cost O(offset) in s and p. 'waiting-children': by the parent's own
--          due time, O(log N + limit).
--          Error 'DELAYQ_BAD_ARG <reason>' for a state not above, KEYS other than 11 (12 with
--          'waiting', 12 with 'waiting-children', 14 with 'ids'), an offset that is not a whole number, a limit that is not one
--          >= 1, newest other than 0 or 1, ARGV other than these 4 values (ids: a granularity that
--          is not a whole ms >= 1, or an id add.lua would refuse).
-- Guarantee: read-only.

--!include args.lua
--!include record.lua
--!include job-rows.lua
--!include wheel.lua

local STATES = {
  waiting = 11, active = 11, completed = 11, cancelled = 11, dead = 11, ['waiting-children'] = 12, ids = 14,
}
local base_keys = STATES[ARGV[1] or '']
local problem = not base_keys and 'ARGV[1] state ' .. tostring(ARGV[1]) .. ' is not waiting, active, completed, cancelled, dead, waiting-children or ids'
if not problem and #KEYS ~= base_keys and not (ARGV[1] == 'waiting' and #KEYS == 12) then
  problem = 'KEYS has ' .. #KEYS .. ' keys; list ' .. ARGV[1] .. ' takes ' .. base_keys .. (ARGV[1] == 'waiting' and ' (12 with gq)' or '')
end
problem = problem
  or check_whole(ARGV[2], 'ARGV[2] offset', 0, 2 ^ 53 - 1)
  or check_whole(ARGV[3], 'ARGV[3] limit', 1, 2 ^ 53 - 1)
  or ARGV[4] ~= '0' and ARGV[4] ~= '1' and 'ARGV[4] newest ' .. tostring(ARGV[4]) .. ' is not 0 or 1'
if not problem and ARGV[1] == 'ids' then
  problem = check_whole(ARGV[5], 'ARGV[5] granularity ms', 1, 2 ^ 53 - 1)
  for i = 6, problem and 5 or #ARGV do
    problem = check_id(ARGV[i], 'ARGV[' .. i .. '] id')
    if problem then break end
  end
elseif not problem then
  problem = check_arg_count(4, 'list ' .. ARGV[1])
end
if problem then return bad_arg(problem) end

local TWO42 = 4398046511104
local j, s, p, r, a, c, x, d, e, wk, pg = unpack(KEYS, 1, 11)
local state = ARGV[1]
local offset, limit = tonumber(ARGV[2]), tonumber(ARGV[3])
local newest = ARGV[4] == '1'
local stop = offset + limit - 1

-- "<prio>:<id>" -> id
local function prio_id(member)
  return string.sub(member, string.find(member, ':', 1, true) + 1)
end

local function range(key, first, last)
  if newest then return redis.call('ZREVRANGE', key, first, last, 'WITHSCORES') end
  return redis.call('ZRANGE', key, first, last, 'WITHSCORES')
end

local ids, scores, members = {}, {}, {}
local function push(id, score, member)
  ids[#ids + 1] = id
  scores[#ids] = score
  members[#ids] = member or false
end

if state == 'waiting' then
  local ready = redis.call('ZCARD', r)
  if offset < ready then
    local page = redis.call('ZRANGE', r, offset, math.min(stop, ready - 1), 'WITHSCORES')
    for i = 1, #page, 2 do push(prio_id(page[i]), string.format('%.0f', tonumber(page[i + 1]) % TWO42)) end
  end
  -- s and p merged by due: the page's part of each is within its first (rest + skip) entries.
  local skip = math.max(0, offset - ready)
  local want = limit - #ids
  if want > 0 then
    local from_s = redis.call('ZRANGE', s, 0, skip + want - 1, 'WITHSCORES')
    local from_p = redis.call('ZRANGE', p, 0, skip + want - 1, 'WITHSCORES')
    local i, k, n = 1, 1, 0
    while n < skip + want and (i <= #from_s or k <= #from_p) do
      local take_s = k > #from_p or (i <= #from_s and tonumber(from_s[i + 1]) <= tonumber(from_p[k + 1]))
      local id, due
      if take_s then
        id, due = from_s[i], from_s[i + 1]
        i = i + 2
      else
        id, due = prio_id(from_p[k]), from_p[k + 1]
        k = k + 2
      end
      n = n + 1
      if n > skip then push(id, due) end
    end
  end
  -- Grouped jobs after the others: gq is ordered by group, then due (its members carry both).
  local gq = KEYS[12]
  want = limit - #ids
  if gq and want > 0 then
    local before = ready + redis.call('ZCARD', s) + redis.call('ZCARD', p)
    local from = math.max(0, offset - before)
    for _, member in ipairs(redis.call('ZRANGE', gq, from, from + want - 1)) do
      local zero = string.find(member, '\0', 1, true)
      push(string.sub(member, zero + 7), string.format('%.0f', struct.unpack('>I6', member, zero + 1)))
    end
  end
elseif state == 'active' then
  local page = range(a, offset, stop)
  for i = 1, #page, 2 do push(member_id(page[i]), page[i + 1], page[i]) end
elseif state == 'completed' or state == 'cancelled' or state == 'dead' then
  local key = (state == 'completed' and c) or (state == 'cancelled' and x) or d
  local page = range(key, offset, stop)
  for i = 1, #page, 2 do push(page[i], page[i + 1]) end
elseif state == 'waiting-children' then
  local page = range(KEYS[12], offset, stop)
  for i = 1, #page, 2 do push(page[i], page[i + 1]) end
else -- 'ids'
  local K = {}
  local bad = wheel_keys(K, 12, 5)
  if bad or not K.wi then return redis.error_reply('DELAYQ_BAD_ARG ' .. (bad or 'ids needs the wheel keys')) end
  for i = 6, #ARGV do
    -- A job taken from the wheel since the caller read the lists is no longer waiting: left out.
    local due = wheel_due(K, ARGV[i])
    if due then push(ARGV[i], string.format('%.0f', due)) end
  end
end

return job_rows({ j = j, e = e, wk = wk, pg = pg }, ids, scores, members, state == 'active')
