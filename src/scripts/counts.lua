-- counts: how many jobs one partition holds in each state, how many of the waiting ones are due
-- (and of those, held back by their group), the next due time and, when asked, how many fall due
-- in each slice of the coming time: every figure a view shows, in one read by the server clock
-- (through src/queue/reads.ts: queue.counts(), src/inspect/inspector.ts, the metrics;
-- docs/ARCHITECTURE.md §4.9).
--
-- KEYS[1] s  KEYS[2] p  KEYS[3] r  KEYS[4] gq  KEYS[5] gw  KEYS[6] gr  KEYS[7] gc  KEYS[8] a
-- KEYS[9] d  KEYS[10] c  KEYS[11] x  KEYS[12] z  KEYS[13] fw (flow parents waiting for children)
-- KEYS[14..] wheel strategy only: wr, wi, wc, then bucket lists (wheel.lua wheel_keys)
-- ARGV[1] the group concurrency (the queue's recorded one; 0: no bound known)
-- ARGV[2] slice ms of the due histogram (0: no histogram)  ARGV[3] its number of slices (<= 1440)
-- ARGV[4..] wheel strategy only: the granularity ms, then the start of each bucket list passed
-- Returns: { scheduled, due, held, active, dead, completed, cancelled, waiting_children,
--            paused (0/1), now, next_due or -1, overdue, slice 1, ..., slice n }
--   scheduled  every waiting job: s, p, r, gq, and the wheel's buckets and ready list.
--   due        the waiting jobs whose due time has come, of every class: s and p up to now, all of
--              r, every grouped job due by now (whether or not its group may start it), the
--              wheel's ready list and its buckets that have ended (promoted at the next claim).
--   waiting_children  the flow parents in fw, waiting for their children (flow.lua): in no
--              waiting set, so not in scheduled, due, next_due or the slices (a parent's own due
--              time says nothing of when its children complete).
--   held       the part of `due` that no worker may start now because of its group: a group at
--              its concurrency bound (or paused: in neither gw nor gr) holds all its due jobs,
--              one waiting for its rate limit's next token (in gw past its head's due) holds all,
--              and one with free slots holds those due jobs beyond its free slots.
--   next_due   the earliest due time of a waiting job (r's head in claim order stands for r, whose
--              jobs are all due; the wheel's ready list counts as due now).
--   overdue, slices  with ARGV[2] > 0: `overdue` = due; slice i (1-based) counts the jobs due in
--              (now + (i-1) * ms, now + i * ms], the wheel's by their bucket's end (when they are
--              promoted). Empty otherwise.
-- Errors: DELAYQ_WRONG_BUCKET <start>,... (wheel) when a bucket that counts (ended, or ending
--         within the histogram) was not passed: the caller calls again with them.
--         DELAYQ_BAD_ARG <reason> for a KEYS count other than 13 (16 or more with the wheel), a
--         group concurrency that is not 0..1000000, a slice ms or slice count that is not a whole
--         number (slices at most 1440, and 1 or more with a slice ms), or ARGV other than these
--         3 values without the wheel.
-- Cost: O(log N) per set, plus O(log N) per group that has waiting jobs (grouped jobs are ordered
--       by group, so a group's due jobs are counted by one ZLEXCOUNT each), plus with a histogram
--       at most one read per slice per group that has jobs in it. Read-only.

--!include prelude.lua
--!include args.lua
--!include groups.lua
--!include wheel.lua

local TWO42 = 4398046511104
-- A group with at most this many jobs in the histogram's horizon has them read and placed one
-- by one; one with more is counted slice by slice.
local GROUP_READ_AT_MOST = 64
local MAX_SLICES = 1440

local problem = check_key_count(13, true)
  or check_group_concurrency(ARGV[1], 'ARGV[1] group concurrency')
  or check_whole(ARGV[2], 'ARGV[2] slice ms', 0, 2 ^ 53 - 1)
  or check_whole(ARGV[3], 'ARGV[3] slices', 0, MAX_SLICES)
  or (tonumber(ARGV[2]) > 0) ~= (tonumber(ARGV[3]) > 0) and 'ARGV[3] slices ' .. ARGV[3] .. ' with slice ms ' .. ARGV[2]
    .. ': a histogram takes both above 0, none both 0'
  or KEYS[14] == nil and check_arg_count(3, 'counts without the wheel')
if problem then return bad_arg(problem) end
local s, p, r, gq, gw, gr, gc, a, d, c, x, z, fw = unpack(KEYS, 1, 13)
local group_max = tonumber(ARGV[1])
local slice_ms, slices = tonumber(ARGV[2]), tonumber(ARGV[3])
local K = { gq = gq, gw = gw, gr = gr, gc = gc }
local bad = wheel_keys(K, 14, 4)
if bad then return bad_arg(bad) end
local now = now_ms()
local histogram = slice_ms > 0
local horizon = histogram and now + slices * slice_ms or now
local slice = {}
for i = 1, slices do slice[i] = 0 end

local next_due = -1
local function earlier(due)
  if due ~= nil and (next_due == -1 or due < next_due) then next_due = due end
end
local function head_due(key)
  local head = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  return head[2] and tonumber(head[2]) or nil
end
-- The slice of a due time after now.
local function slice_of(due)
  return math.min(slices, math.floor((due - now - 1) / slice_ms) + 1)
end

-- The wheel's buckets that count are checked first, so a missing one fails before any work.
local wheel_buckets = nil
if K.wi then
  wheel_buckets = redis.call('ZRANGEBYSCORE', K.wi, '-inf', horizon, 'WITHSCORES')
  local missing = {}
  for i = 1, #wheel_buckets, 2 do
    if not K.wb[tonumber(wheel_buckets[i])] then missing[#missing + 1] = wheel_buckets[i] end
  end
  if #missing > 0 then return redis.error_reply('DELAYQ_WRONG_BUCKET ' .. table.concat(missing, ',')) end
end

-- The default class and the prioritized jobs not yet due: scored by due time.
earlier(head_due(s))
earlier(head_due(p))
local r_head = head_due(r)
if r_head then earlier(r_head % TWO42) end
local ready = redis.call('ZCARD', r)
local scheduled = redis.call('ZCARD', s) + redis.call('ZCARD', p) + ready + redis.call('ZCARD', gq)
local due = redis.call('ZCOUNT', s, '-inf', now) + redis.call('ZCOUNT', p, '-inf', now) + ready
if histogram then
  for i = 1, slices do
    local from, to = '(' .. ms_text(now + (i - 1) * slice_ms), ms_text(now + i * slice_ms)
    slice[i] = redis.call('ZCOUNT', s, from, to) + redis.call('ZCOUNT', p, from, to)
  end
end

-- Grouped jobs, group by group: gq holds each group's jobs together, in due order.
local held = 0
local due_bound = struct.pack('>I6', now + 1)
local horizon_bound = struct.pack('>I6', horizon + 1)
local after = '-'
while true do
  local head = redis.call('ZRANGEBYLEX', gq, after, '+', 'LIMIT', 0, 1)[1]
  if not head then break end
  local g = string.sub(head, 1, string.find(head, '\0', 1, true) - 1)
  after = '[' .. g .. '\1'
  local from = '[' .. g .. '\0'
  local head_due = group_member_due(g, head)
  earlier(head_due)
  -- The head is the group's earliest job: a group whose head is not due has nothing due.
  local due_here = 0
  if head_due <= now then due_here = redis.call('ZLEXCOUNT', gq, from, '(' .. g .. '\0' .. due_bound) end
  if due_here > 0 then
    due = due + due_here
    local free = 0
    -- A group in gr may start jobs now; so may one in gw whose time to look again has come (the
    -- next claim moves it to gr); one in gw later waits for its rate limit's token.
    local turn_due = redis.call('ZSCORE', gw, g)
    if redis.call('ZSCORE', gr, g) or (turn_due and tonumber(turn_due) <= now) then
      free = due_here
      if group_max > 0 then
        free = math.max(0, group_max - (tonumber(redis.call('HGET', gc, g)) or 0))
      end
    end
    if due_here > free then held = held + due_here - free end
  end
  if histogram and head_due <= horizon then
    local later_from = '[' .. g .. '\0' .. due_bound
    local coming = redis.call('ZLEXCOUNT', gq, later_from, '(' .. g .. '\0' .. horizon_bound)
    if coming > 0 and coming <= GROUP_READ_AT_MOST then
      for _, member in ipairs(redis.call('ZRANGEBYLEX', gq, later_from, '(' .. g .. '\0' .. horizon_bound)) do
        local i = slice_of(group_member_due(g, member))
        slice[i] = slice[i] + 1
      end
    elseif coming > 0 then
      for i = 1, slices do
        local lo = '[' .. g .. '\0' .. struct.pack('>I6', now + (i - 1) * slice_ms + 1)
        local hi = '(' .. g .. '\0' .. struct.pack('>I6', now + i * slice_ms + 1)
        slice[i] = slice[i] + redis.call('ZLEXCOUNT', gq, lo, hi)
      end
    end
  end
end

-- The wheel: the ready list is due; a bucket's jobs fall due together at its end.
if K.wi then
  local waiting, ready_ids, wheel_next_due = wheel_counts(K, now)
  scheduled = scheduled + waiting
  due = due + ready_ids
  if wheel_next_due >= 0 then earlier(wheel_next_due) end
  for i = 1, #wheel_buckets, 2 do
    local ends = tonumber(wheel_buckets[i + 1])
    local n = redis.call('LLEN', K.wb[tonumber(wheel_buckets[i])])
    if ends <= now then
      due = due + n
    elseif histogram then
      local at = slice_of(ends)
      slice[at] = slice[at] + n
    end
  end
end

local reply = {
  scheduled,
  due,
  held,
  redis.call('ZCARD', a),
  redis.call('ZCARD', d),
  redis.call('ZCARD', c),
  redis.call('ZCARD', x),
  redis.call('ZCARD', fw),
  redis.call('EXISTS', z),
  now,
  next_due,
}
if histogram then
  reply[#reply + 1] = due
  for i = 1, slices do reply[#reply + 1] = slice[i] end
end
return reply
