-- Claim step 5, the classes (claim.lua): take up to `want` due jobs in the order they are leased.
-- Among due jobs the lower priority goes first, equal priorities in due order; the default class
-- (s) is priority 0; prioritized jobs wait in p until due, then in r scored by priority and due
-- (place.lua); grouped jobs come from the groups step, behind the others of the same take. The
-- wheel strategy takes from its ready list (wheel.lua wheel_take) instead, never ahead.
-- Inputs: the context; `want`; `special`, the gate's count (0: no priority, group or pause key
--   exists, so s alone is read); the acks' grouped and other counts (for the groups step).
-- Outputs: the ids taken, their dues, their groups (by index; none for ungrouped jobs), in lease
--   order, every one already out of where it waited; when to look again (-1: nothing known).
-- Cost (default class alone): ZPOPMIN s for a take of one where the strategy allows it (ZADD s
--   back when not due); a take under 16: ZRANGEBYSCORE s up to want + 1 due heads with their
--   scores and ZREM s, and ZRANGE s n n when fewer than want + 1 were due; a larger take: the due
--   heads' ids (ZRANGEBYSCORE s, no scores), then per run of 8 or more heads of one due time a
--   ZSCORE s and a ZCOUNT s (one double for the run, where each head's score was a double Redis
--   formats and Lua parses: ~4,600 instructions a job at 50 a call), the rest with their scores
--   (ZRANGE s by rank), and ZREM s. With priorities: ZRANGE p (ZADD r + ZREM p to promote),
--   ZRANGE r, ZREM r.

-- The takes' bounds, in one table (a chunk has at most 200 locals). promote: prioritized jobs
-- promoted from p to r per call at most, the rest on the next call. run: heads of one due time
-- that make reading their due as a run (ZSCORE + ZCOUNT, two commands) cheaper than reading each
-- head's score; below it, the rest of a take's heads come with their scores. run_take: takes of
-- fewer jobs read their heads with their scores in one command, where the runs' two commands and
-- the ids read apart would cost more than the scores of so few heads.
local CLAIM_TAKE = { promote = 1000, run = 8, run_take = 16 }
-- An empty list, read only, shared by every call: what a take without jobs or without grouped
-- jobs returns (a table made and collected per call costs about as much as a command's reply).
local CLAIM_NONE = {}

-- The default class's due heads: up to `want` ids and their dues, when to look again, and whether
-- they were popped already (ZPOPMIN) or are still in s.
local function claim_default_heads(c, want, special)
  local K = c.K
  if want == 1 and special == 0 and c.s.may_pop then
    -- A take of one pops the head, and puts it back when it is not due: one command where
    -- ZRANGE + ZREM are two. Larger takes read first, so a claim at the edge of the due jobs
    -- never pops and rewrites jobs it cannot take.
    local head = redis.call('ZPOPMIN', K.s)
    if head[2] then
      local due = tonumber(head[2])
      -- The next head is not read: this worker is full now and claims again when it acks.
      if due <= c.cutoff then return { head[1] }, { due }, -1, true end
      redis.call('ZADD', K.s, head[2], head[1])
      return CLAIM_NONE, CLAIM_NONE, due, true
    end
    return CLAIM_NONE, CLAIM_NONE, -1, true
  end
  if want < CLAIM_TAKE.run_take then
    local ids, dues, next_at = {}, {}, -1
    local heads = redis.call('ZRANGEBYSCORE', K.s, '-inf', c.cutoff_text, 'WITHSCORES', 'LIMIT', '0', int_text(want + 1))
    local due_count = #heads / 2
    -- Jobs added together share a due time, and Lua strings are interned: a score text like the
    -- one before is the same number, and == compares pointers (no strtod).
    local last_text, last_due = nil, nil
    for i = 1, math.min(due_count, want) do
      local text = heads[2 * i]
      if text ~= last_text then last_text, last_due = text, tonumber(text) end
      ids[i], dues[i] = heads[2 * i - 1], last_due
    end
    if due_count > want then
      -- Due by the cutoff, perhaps not yet by now (a claim ahead).
      next_at = math.max(tonumber(heads[2 * want + 2]), c.now)
    else
      -- Every due job was read: the next head (by rank, before anything is removed) is not due.
      local rank = int_text(due_count)
      local following = redis.call('ZRANGE', K.s, rank, rank, 'WITHSCORES')
      if following[2] then next_at = tonumber(following[2]) end
    end
    return ids, dues, next_at, false
  end
  -- The due heads only, up to want + 1 (one more than taken says more are due), as ids: a score
  -- in a reply is a double Redis formats ('%.17g', ~4,000 instructions) and Lua parses back.
  local heads = redis.call('ZRANGEBYSCORE', K.s, '-inf', c.cutoff_text, 'LIMIT', '0', int_text(want + 1))
  local n = #heads
  local dues, next_at = {}, -1
  if n == 0 then
    -- Nothing due: the head is when to look again.
    local following = redis.call('ZRANGE', K.s, '0', '0', 'WITHSCORES')
    if following[2] then next_at = tonumber(following[2]) end
    return heads, dues, next_at, false
  end
  -- The heads are s's first n by rank (the range starts at -inf). Their dues: jobs added together
  -- share one, so a due and how many share it (ZSCORE, ZCOUNT: one double and an integer) cover a
  -- run of heads; once a run is short or few heads are left, the rest are read with their scores
  -- by rank, and with them, when all due heads were read (n <= want), the next one (not due).
  local at, run, following_read = 1, CLAIM_TAKE.run, false
  while at <= n do
    if run < CLAIM_TAKE.run or n - at < CLAIM_TAKE.run then
      following_read = n <= want
      local rest = redis.call('ZRANGE', K.s, int_text(at - 1), int_text(following_read and n or n - 1), 'WITHSCORES')
      -- Lua strings are interned: a score text like the one before is the same number, and ==
      -- compares pointers (no strtod).
      local last_text, last_due = nil, nil
      for k = 2, #rest, 2 do
        local text = rest[k]
        if text ~= last_text then last_text, last_due = text, tonumber(text) end
        dues[at + k / 2 - 1] = last_due
      end
      break
    end
    local score = redis.call('ZSCORE', K.s, heads[at])
    run = redis.call('ZCOUNT', K.s, score, score)
    local due = tonumber(score)
    for k = at, math.min(n, at + run - 1) do dues[k] = due end
    at = at + run
  end
  if n > want then
    -- Due by the cutoff, perhaps not yet by now (a claim ahead); not taken.
    next_at = math.max(dues[n], c.now)
    heads[n], dues[n] = nil, nil
  elseif following_read then
    -- The next head, not due (nil: s has no other job).
    next_at = dues[n + 1] or -1
    dues[n + 1] = nil
  else
    -- Every due job was read: the next head (by rank, before anything is removed) is not due.
    local following = redis.call('ZRANGE', K.s, int_text(n), int_text(n), 'WITHSCORES')
    if following[2] then next_at = tonumber(following[2]) end
  end
  return heads, dues, next_at, false
end

-- p's due heads move to r, at most CLAIM_TAKE.promote per call, by now (not the cutoff: every job
-- in r is due, and a prioritized job is never claimed ahead). Returns when to look again, and
-- whether more were due than one call promotes: one of them may outrank everything in r, so the
-- call then takes nothing from r or s and answers "look again now" (each call stays bounded, and
-- the order among due jobs stays strict; a burst costs a few calls).
local function claim_promote(c)
  local K, now = c.K, c.now
  local p_heads = redis.call('ZRANGE', K.p, '0', int_text(CLAIM_TAKE.promote), 'WITHSCORES')
  if #p_heads == 0 then return -1, false end
  local zr, rm = {}, {}
  local next_at, capped = -1, false
  for i = 1, #p_heads, 2 do
    local member, due = p_heads[i], tonumber(p_heads[i + 1])
    if due > now then
      next_at = due
      break
    end
    if #rm == CLAIM_TAKE.promote then
      next_at, capped = now, true
      break
    end
    local prio = tonumber(string.match(member, '^(-?%d+):'))
    zr[#zr + 1] = (prio + PLACE_PRIO_BASE) * PLACE_TWO42 + due
    zr[#zr + 1] = member
    rm[#rm + 1] = member
  end
  if #rm > 0 then
    redis.call('ZADD', K.r, unpack(zr))
    redis.call('ZREM', K.p, unpack(rm))
  end
  return next_at, capped
end

local function claim_take(c, want, special, acked_grouped, acked_other)
  local K = c.K
  if want <= 0 then return CLAIM_NONE, CLAIM_NONE, CLAIM_NONE, -1 end
  if K.wi then
    local ids, dues, wheel_next = wheel_take(K, want, c.now)
    return ids, dues, CLAIM_NONE, wheel_next or -1
  end
  local d_ids, d_due, next_at, popped = claim_default_heads(c, want, special)
  if special == 0 then
    if #d_ids > 0 and not popped then redis.call('ZREM', K.s, unpack(d_ids)) end
    return d_ids, d_due, CLAIM_NONE, next_at
  end
  -- Priorities: promote p's due heads to r, then merge r with the default class's due jobs by
  -- score (the default class is priority 0): lower priority first, then due order.
  local promote_at, capped = claim_promote(c)
  local g_ids, g_due, g_groups, groups_at = claim_take_groups(c, want, #d_ids, acked_grouped, acked_other)
  next_at = claim_earliest(claim_earliest(next_at, promote_at), groups_at)
  local room = capped and 0 or want - #g_ids
  local r_heads = room > 0 and redis.call('ZRANGE', K.r, '0', int_text(room), 'WITHSCORES') or {}
  local ids, dues, groups = {}, {}, {}
  local di, ri = 1, 1
  local from_s, from_r = 0, {}
  while #ids < room and (di <= #d_ids or ri < #r_heads) do
    local d_score = di <= #d_ids and (PLACE_PRIO_BASE * PLACE_TWO42 + d_due[di]) or nil
    local r_score = ri < #r_heads and tonumber(r_heads[ri + 1]) or nil
    if r_score and (not d_score or r_score < d_score) then
      local member = r_heads[ri]
      ids[#ids + 1] = prio_member_id(member)
      dues[#dues + 1] = r_score % PLACE_TWO42
      from_r[#from_r + 1] = member
      ri = ri + 2
    else
      ids[#ids + 1] = d_ids[di]
      dues[#dues + 1] = d_due[di]
      from_s = from_s + 1
      di = di + 1
    end
  end
  if #from_r > 0 then redis.call('ZREM', K.r, unpack(from_r)) end
  if from_s > 0 then redis.call('ZREM', K.s, unpack(d_ids, 1, from_s)) end
  -- Due jobs left in r (all of r is due) or in s: look again at once.
  if ri < #r_heads or di <= #d_ids then next_at = claim_earliest(next_at, c.now) end
  for i, id in ipairs(g_ids) do
    ids[#ids + 1] = id
    dues[#dues + 1] = g_due[i]
    groups[#ids] = g_groups[i]
  end
  return ids, dues, groups, next_at
end
