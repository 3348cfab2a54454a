-- search: one step of queue.search (issue 33; docs/ARCHITECTURE.md §4.14): walk one source of one
-- partition from a position, up to a budget of entries looked at, and answer the jobs that match
-- with where the walk got to. src/queue/search.ts chains the steps over sources and partitions.
--
-- KEYS[1] j   HASH id -> record        KEYS[2] e   HASH id -> last error JSON
-- KEYS[3] wk  HASH holder number -> "<worker id>|<started ms>"
-- KEYS[4] pg  HASH id -> a running job's progress
-- KEYS[5] the source: s, p, r, gq, fw, a, c, x or d (a ZSET), or wc (the wheel's HASH id -> due)
-- ARGV[1] the source's kind, naming KEYS[5]: 's' (waiting, default class), 'p' (prioritized, not
--         due), 'r' (prioritized, due), 'g' (grouped), 'f' (flow parents waiting for their
--         children, fw), 'a' (running), 'c' (completed), 'x' (cancelled), 'd' (dead), 'w' (the
--         wheel's waiting jobs)
-- ARGV[2] from, ARGV[3] to: epoch ms, whole, from <= to <= 2^48 - 2; the job's time in its state
--         (waiting, waiting for children: due; running: claimed at; completed, cancelled, dead:
--         when it ended) is in [from, to]
-- ARGV[4] id prefix ('' any id), ARGV[5] group ('' any; a group's jobs are only in gq and a: fw
--         holds parents by due time alone, so a group search finds none there)
-- ARGV[6], ARGV[7] the position to go on from ('' '': the start). Ordered sources: the score and
--         member of the last entry looked at (gq: '0' and the member; a member never in the set is
--         fine: the walk goes on at the first entry past it). 'w': the HSCAN cursor and how many
--         matches of its batch were answered already
-- ARGV[8] limit: most jobs answered (1..1000), ARGV[9] budget: most entries looked at (1..100000)
-- Returns: { done (1: the source has nothing past the position; 0: call again from the reach),
--          reach score, reach member (the new position), entries looked at, then 9 per job:
--          its order score and member (what partitions are merged by), id, record, score, last
--          error or false, holder or false, progress or false, lease member or false (the last
--          seven as list.lua's rows; score: due, lease deadline, or when it ended) }
-- Errors: 'DELAYQ_BAD_ARG <reason>' for KEYS other than these 5, ARGV other than these 9 values,
--          or one of them malformed (named); nothing is read then.
-- Order: s, p, fw, a by score (due, lease deadline); r by score (priority, then due); gq by member
--          (group, then due); c, x, d newest first; 'w' in hash order (one partition at a time).
-- Cost: O(log N) to find the position and each time range, then O(1) per entry looked at, at most
--          the budget: ZRANGE of members by rank, in chunks of 500. r's priority levels and gq's
--          groups out of the time range are jumped over, one O(log N) seek each (counted against
--          the budget). s, p, fw, c, x and d are one score range each; a group search of a source
--          other than gq and a looks at nothing. Only the answered jobs' records are read.
-- Guarantee: read-only. An entry in the source from the first call of a walk to its last, with
--          the same score, is answered once if it matches; one that moves (rescheduled, extended,
--          promoted, a parent released from fw) or comes and goes may be answered twice or not at
--          all, as with SCAN.

--!include prelude.lua
--!include record.lua
--!include job-rows.lua
--!include args.lua

local TWO42 = 4398046511104
local MAX_TIME = 281474976710654
local CHUNK = 500
-- What a jump to the next priority level or group counts against the budget: its three O(log N)
-- commands cost about what reading twenty entries of a chunk does.
local SEEK = 20

-- Checks in the order of ARGV, each naming its argument (read-only: nothing to write before them).
local KINDS = { s = true, p = true, r = true, g = true, f = true, a = true, c = true, x = true, d = true, w = true }
local problem = check_key_count(5, false)
  or not KINDS[ARGV[1] or ''] and 'ARGV[1] source ' .. tostring(ARGV[1]) .. ' is not one of s p r g f a c x d w'
  or check_whole(ARGV[2], 'ARGV[2] from', 0, MAX_TIME)
  or check_whole(ARGV[3], 'ARGV[3] to', 0, MAX_TIME)
  or tonumber(ARGV[2]) > tonumber(ARGV[3]) and 'ARGV[2] from ' .. ARGV[2] .. ' is after ARGV[3] to ' .. ARGV[3]
  or type(ARGV[4]) ~= 'string' and 'ARGV[4] id prefix is missing'
  or ARGV[4] ~= '' and check_id(ARGV[4], 'ARGV[4] id prefix')
  or type(ARGV[5]) ~= 'string' and 'ARGV[5] group is missing'
  or ARGV[5] ~= '' and check_group(ARGV[5], 'ARGV[5] group')
  or type(ARGV[6]) ~= 'string' and 'ARGV[6] position score is missing'
  or ARGV[6] ~= '' and check_whole(ARGV[6], 'ARGV[6] position score', 0, 2 ^ 53 - 1)
  or type(ARGV[7]) ~= 'string' and 'ARGV[7] position member is missing'
  or ARGV[6] == '' and ARGV[7] ~= '' and 'ARGV[7] position member is given without ARGV[6]'
  or ARGV[1] == 'w' and ARGV[7] ~= '' and check_whole(ARGV[7], 'ARGV[7] position member (matches answered)', 0, 2 ^ 53 - 1)
  or ARGV[1] == 'g' and ARGV[7] ~= '' and not string.find(ARGV[7], '\0', 1, true) and 'ARGV[7] position member is not a gq member'
  or check_whole(ARGV[8], 'ARGV[8] limit', 1, 1000)
  or check_whole(ARGV[9], 'ARGV[9] budget', 1, 100000)
  or check_arg_count(9, 'search')
if problem then return bad_arg(problem) end
local K = { j = KEYS[1], e = KEYS[2], wk = KEYS[3], pg = KEYS[4] }
local set = KEYS[5]
local kind = ARGV[1]
local from, to = tonumber(ARGV[2]), tonumber(ARGV[3])
local prefix, group = ARGV[4], ARGV[5]
local at_s, at_m = ARGV[6], ARGV[7]
local limit, budget = tonumber(ARGV[8]), tonumber(ARGV[9])

local desc = kind == 'c' or kind == 'x' or kind == 'd'
local plen = #prefix
local examined = 0
-- The reach: the last entry looked at. reach_s nil: look its score up at the end.
local reach_s, reach_m = at_s, at_m
local ids, scores, members, lead = {}, {}, {}, {}

local function fmt(n)
  return string.format('%.0f', n)
end

-- Most ids differ from the prefix in their first byte: compared first, without a substring.
local first_byte = string.byte(prefix, 1)
local function has_prefix(id)
  return plen == 0 or (string.byte(id, 1) == first_byte and string.sub(id, 1, plen) == prefix)
end

-- Answer job `id`: `member` is its lease member (running) or false; key_m, key_s the order key
-- (nil key_s: the entry's score, looked up); `score` the row's (nil: the entry's score, of which
-- r's due is the low 42 bits).
local function answer(id, member, key_m, key_s, score)
  key_s = key_s or redis.call('ZSCORE', set, key_m)
  if score == nil then score = kind == 'r' and fmt(tonumber(key_s) % TWO42) or key_s end
  local n = #ids + 1
  ids[n], scores[n], members[n], lead[n] = id, score, member, { key_s, key_m }
end

-- a < b byte by byte: Lua's own < follows the server's collation locale.
local function bytes_less(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

-- The entries of `set` ordered before (score, member), and whether that entry is in it.
local function rank_of(score, member)
  local at = redis.call('ZSCORE', set, member)
  if at and tonumber(at) == tonumber(score) then return redis.call('ZRANK', set, member), true end
  -- Gone or moved: past the entries of lower score and those of this score with a lower member
  -- (ordered by bytes within a score), found by halving that run.
  local lo = redis.call('ZCOUNT', set, '-inf', '(' .. score)
  local hi = redis.call('ZCOUNT', set, '-inf', score)
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if bytes_less(redis.call('ZRANGE', set, mid, mid)[1], member) then lo = mid + 1 else hi = mid end
  end
  return lo, false
end

-- Visit the ranks first..last of `set` (newest first: last down to first), `visit(member)` each,
-- until the limit or the budget. True when every rank was visited.
local function walk(first, last, visit)
  local i = desc and last or first
  while (desc and i >= first) or (not desc and i <= last) do
    if #ids >= limit or examined >= budget then return false end
    local n = math.min(CHUNK, budget - examined, desc and (i - first + 1) or (last - i + 1))
    local low = desc and (i - n + 1) or i
    local page = redis.call('ZRANGE', set, low, low + n - 1)
    local k, stop, step = 1, #page, 1
    if desc then k, stop, step = #page, 1, -1 end
    while (step > 0 and k <= stop) or (step < 0 and k >= stop) do
      examined = examined + 1
      reach_s, reach_m = nil, page[k]
      visit(page[k])
      if #ids >= limit then return false end
      k = k + step
    end
    i = desc and (i - n) or (i + n)
  end
  return true
end

-- The ranks of `set` whose score is in [lo_score, hi_score], cut at the position when the walk
-- starts there: first, last.
local function score_ranks(lo_score, hi_score, from_position)
  local first = redis.call('ZCOUNT', set, '-inf', '(' .. fmt(lo_score))
  local last = redis.call('ZCOUNT', set, '-inf', fmt(hi_score)) - 1
  if from_position and at_m ~= '' then
    local below, present = rank_of(at_s, at_m)
    if desc then last = math.min(last, below - 1) else first = math.max(first, below + (present and 1 or 0)) end
  end
  return first, last
end

local function visit_plain(m)
  if has_prefix(m) then answer(m, false, m) end
end

-- "<prio>:<id>" (p, r)
local function visit_prio(m)
  local id = string.sub(m, string.find(m, ':', 1, true) + 1)
  if has_prefix(id) then answer(id, false, m) end
end

local done
if group ~= '' and kind ~= 'g' and kind ~= 'a' then
  -- A grouped job waits in gq and runs in a; no other source is kept by group.
  done = true
elseif kind == 's' or kind == 'p' or kind == 'f' or kind == 'c' or kind == 'x' or kind == 'd' then
  local first, last = score_ranks(from, to, true)
  done = walk(first, last, kind == 'p' and visit_prio or visit_plain)
elseif kind == 'a' then
  local first, last = score_ranks(0, MAX_TIME * 2, true)
  done = walk(first, last, function(m)
    local claimed_at = tonumber(string.match(m, '^%d+%.(%d+)|'))
    if not claimed_at or claimed_at < from or claimed_at > to then return end
    local id, g = member_id_group(m)
    if group ~= '' and g ~= group then return end
    if has_prefix(id) then answer(id, m, m) end
  end)
elseif kind == 'r' then
  -- Scores are (prio + 1024) * 2^42 + due, due < 2^42: one score range per priority level.
  local top = math.min(to, TWO42 - 1)
  done = from > top
  local level
  if not done then
    if at_s ~= '' then
      level = math.floor(tonumber(at_s) / TWO42)
    else
      local head = redis.call('ZRANGE', set, 0, 0, 'WITHSCORES')
      done = head[1] == nil
      if not done then level = math.floor(tonumber(head[2]) / TWO42) end
    end
  end
  local first_level = true
  while not done do
    local base = level * TWO42
    local first, last = score_ranks(base + from, base + top, first_level)
    first_level = false
    if not walk(first, last, visit_prio) then break end
    examined = examined + SEEK
    local nxt = redis.call('ZRANGEBYSCORE', set, fmt((level + 1) * TWO42), '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    if nxt[1] == nil then
      done = true
    else
      level = math.floor(tonumber(nxt[2]) / TWO42)
      -- Every entry before this level's range is looked at or out of the time range.
      reach_s, reach_m = fmt(level * TWO42 + from), ''
      if #ids >= limit or examined >= budget then break end
    end
  end
elseif kind == 'g' then
  -- Members "<group>\0<due: 6 bytes BE><id>", all scores 0: one lex range per group.
  local function group_of(m)
    return string.sub(m, 1, string.find(m, '\0', 1, true) - 1)
  end
  local function visit_g(m)
    local zero = string.find(m, '\0', 1, true)
    local id = string.sub(m, zero + 7)
    if has_prefix(id) then answer(id, false, m, '0', fmt(struct.unpack('>I6', m, zero + 1))) end
  end
  local g
  if group ~= '' then
    g = group
  elseif at_m ~= '' then
    g = group_of(at_m)
  else
    local head = redis.call('ZRANGE', set, 0, 0)
    if head[1] then g = group_of(head[1]) end
  end
  done = g == nil
  local first_group = true
  while not done do
    local first = redis.call('ZLEXCOUNT', set, '-', '(' .. g .. '\0' .. struct.pack('>I6', from))
    local last = redis.call('ZLEXCOUNT', set, '-', '(' .. g .. '\0' .. struct.pack('>I6', to + 1)) - 1
    if first_group and at_m ~= '' then first = math.max(first, redis.call('ZLEXCOUNT', set, '-', '[' .. at_m)) end
    first_group = false
    if not walk(first, last, visit_g) then break end
    if group ~= '' then
      done = true
    else
      examined = examined + SEEK
      local nxt = redis.call('ZRANGEBYLEX', set, '[' .. g .. '\1', '+', 'LIMIT', 0, 1)
      if nxt[1] == nil then
        done = true
      else
        g = group_of(nxt[1])
        reach_s, reach_m = '0', g .. '\0' .. struct.pack('>I6', from)
        if #ids >= limit or examined >= budget then break end
      end
    end
  end
  if reach_s == nil then reach_s = '0' end
else -- 'w': the wheel's dues, in hash order; a match is answered once per batch position.
  local cursor = at_s ~= '' and at_s or '0'
  local skip = tonumber(at_m) or 0
  local pattern = string.gsub(prefix, '[%*%?%[%]\\]', '\\%0') .. '*'
  done = false
  while true do
    if #ids >= limit or examined >= budget then
      reach_s, reach_m = cursor, tostring(skip)
      break
    end
    local count = math.min(CHUNK, budget - examined)
    local page = redis.call('HSCAN', set, cursor, 'MATCH', pattern, 'COUNT', count)
    examined = examined + count
    local batch, matched, full = page[2], 0, false
    for i = 1, #batch, 2 do
      local due = math.abs(tonumber(batch[i + 1]) or -1)
      if due >= from and due <= to then
        matched = matched + 1
        if matched > skip then
          answer(batch[i], false, batch[i], fmt(due), fmt(due))
          if #ids >= limit and i < #batch - 1 then
            full = true
            break
          end
        end
      end
    end
    if full then
      -- Stopped inside the batch: the next call reads it again and skips what was answered.
      reach_s, reach_m = cursor, tostring(matched)
      break
    end
    cursor, skip = page[1], 0
    reach_s, reach_m = cursor, '0'
    if cursor == '0' then
      done = true
      break
    end
  end
end

if reach_s == nil then reach_s = redis.call('ZSCORE', set, reach_m) or '' end
local reply = { done and 1 or 0, reach_s, reach_m, examined }
local rows = job_rows(K, ids, scores, members, kind == 'a', lead)
for i = 1, #rows do reply[#reply + 1] = rows[i] end
return reply
