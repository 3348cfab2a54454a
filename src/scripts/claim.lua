-- claim: ack the jobs a worker finished, then lease it up to `limit` due jobs, in one call
-- (docs/ARCHITECTURE.md §4.2). Every strategy uses this script: zpopmin and range on the
-- waiting sets, the wheel through wheel_take (wheel.lua).
--
-- KEYS[1] s   ZSET id -> due ms: waiting jobs of the default class
-- KEYS[2] p   ZSET "<prio>:<id>" -> due ms: waiting prioritized jobs, not yet promoted
-- KEYS[3] r   ZSET "<prio>:<id>" -> (prio + 1024) * 2^42 + due: due prioritized jobs
-- KEYS[4] gq  ZSET, scores 0: "<group>\0<due: 6 bytes BE><id>" of waiting grouped jobs
-- KEYS[5] gw  ZSET group -> when to look at it again: groups with a free slot, head not due (or
--             waiting for their rate limit's next token)
-- KEYS[6] gr  ZSET group -> turn: groups with a free slot and a due head, lowest turn first
-- KEYS[7] gc  HASH group -> running count; "<group>\0l" -> the group's rate bucket
-- KEYS[8] j   HASH id -> record
-- KEYS[9] a   ZSET lease member "<claims>.<claimed at>|<id>[\0<group>]" -> deadline ms
-- KEYS[10] c  ZSET id -> completed at ms
-- KEYS[11] x  ZSET id -> cancelled at ms (the reason a cancelled job's late ack is refused)
-- KEYS[12] e  HASH id -> last error (deleted by the ack of a job that had one)
-- KEYS[13] d  ZSET id -> died at ms (a job whose record is missing or unreadable is buried)
-- KEYS[14] z  STRING present while the queue (partition) is paused
-- KEYS[15] lim ZSET lease member -> start ms of recent starts: the queue-wide rate limit
-- KEYS[16] ev STREAM of events
-- KEYS[17] w  channel: wake messages
-- KEYS[18] n  HASH of counters (reap-on-claim counts `reaped`; workers flush claimed/completed)
-- KEYS[19] pg HASH id -> progress of a running job (deleted when its attempt ends)
-- KEYS[20] gn  ZSET group -> its waiting jobs (taken jobs leave their group's count)
-- KEYS[21...] wheel strategy only: ready, wheel, wheel count, then bucket lists (wheel.lua)
-- ARGV[1] limit: jobs to claim (0: ack only), ARGV[2] lease ms, ARGV[3] holder number (wk),
-- ARGV[4] group concurrency (the queue's recorded one, >= 1), ARGV[5] group rate max, ARGV[6]
-- group rate per ms (0, 0: none), ARGV[7] queue rate max, ARGV[8] queue rate per ms (0, 0: none),
-- ARGV[9] dead max count, ARGV[10] dead max age ms, ARGV[11] flags: 'z' the strategy allows
-- ZPOPMIN, 'm' the server has ZMSCORE (Redis >= 6.2), 'a<ms>' claim ahead: also lease jobs of the
-- default class and of groups due up to <ms> (0-1000) after now, which the worker starts at their
-- due time by its lower bound of the server clock, not before (docs/ARCHITECTURE.md §5.3; prioritized jobs
-- and the wheel, whose buckets go whole, only when due),
-- ARGV[12] events cap (events.lua),
-- ARGV[13] M acks, then 4 per ack: lease member; the lease deadline the worker was last told
-- (a resent ack is recognised by it); flags: 'e' the job had a last error, 'p' it reported
-- progress, 'f' the job's final record follows (what to store: a completed record with the claim
-- block and max attempts of the claim, and the result with U; record.lua rec_final_problem says
-- what is accepted), or, from workers of delayq 0.2, 'u' a result follows; the final record
-- ('f'), the result bytes (the codec's, with 'u') or nothing. Wheel strategy only, after the
-- acks: granularity ms and the start of each bucket list in KEYS.
-- Returns: { now, next_at, paused (0/1), the M ack outcomes as one string of a letter each (O: OK,
--          A: already applied, C: lost, cancelled, E: lost, expired, N: lost, not held), n, then 3
--          per job: lease member, record (with its new claim block), due }, and with the wheel
--          strategy after them: jobs left in ready, 1 when due buckets were left for lack of their
--          keys (claim again at once), m, and the starts of the index's first m buckets (pass
--          those next time); last, the script's TIME in µs. next_at: when to claim again (-1:
--          nothing known; paused: wait for the resume message).
-- Cost (fast path, default class): TIME, a ZREM a per ack whose known deadline is ahead (its
--          answer decides; ZMSCORE a and one ZREM a for the others), ZADD c, EXISTS, ZPOPMIN s (or
--          ZRANGEBYSCORE s + ZREM s, and ZRANGE s n n when fewer than limit + 1 were due), HMGET
--          j, HSET j, ZADD a, and ZRANGE a 0 0 when the batch was not full; a claim of 16 jobs or
--          more also OBJECT ENCODING a (and ZADD, ZREM of a long member when a is a listpack:
--          skiplist.lua). No per-job command but the acks' ZREM.
-- Guarantee: an ack is applied only for a member whose lease is still valid (docs/DESIGN.md invariant 4);
--          a job is leased only when due by TIME (invariant 3) and the queue is not paused; among
--          due jobs the lower priority goes first, equal priorities in due order (the default
--          class is priority 0); a group never has more than `group concurrency` jobs leased (gc
--          counts them; every path that ends a lease frees its slot), groups with due jobs take
--          turns (one job per group per round) and get half of a claim when other due jobs wait
--          (all of it when none do), a paused group is in neither gw nor gr and is never taken
--          (groups.lua: no check here, so a pause costs the claim nothing), and with a group rate limit a group starts at most max jobs
--          per `per` ms on average (token bucket, bursts up to max); with a rate limit no more
--          than max jobs start in any window of `per` ms across all workers; a taken id without a
--          readable record is buried, never dropped (invariant 5).

--!include prelude.lua
--!include args.lua
--!include events.lua
--!include record.lua
--!include wheel.lua
--!include place.lua
--!include bury.lua
--!include reap-expired.lua
--!include skiplist.lua
--!include claim-bounds.lua

local K = {
  s = KEYS[1], p = KEYS[2], r = KEYS[3], gq = KEYS[4], gw = KEYS[5], gr = KEYS[6], gc = KEYS[7],
  j = KEYS[8], a = KEYS[9], c = KEYS[10], x = KEYS[11], e = KEYS[12], d = KEYS[13], z = KEYS[14],
  lim = KEYS[15], ev = KEYS[16], w = KEYS[17], n = KEYS[18], pg = KEYS[19], gn = KEYS[20],
}
K.events = K.ev
-- Settings as numbers through the memo (prelude.lua): the same texts come in every call.
local limit, lease_ms, holder = setting_number(ARGV[1]), setting_number(ARGV[2]), setting_number(ARGV[3])
-- What the worker asked for: `limit` may be lowered by the queue's rate limit below.
local asked_limit = limit
local rate_max, rate_per_ms = setting_number(ARGV[7]), setting_number(ARGV[8])
local group_max = math.max(setting_number(ARGV[4]) or 1, 1)
local group_rate_max, group_rate_per = setting_number(ARGV[5]) or 0, setting_number(ARGV[6]) or 0
K.gmax = group_max
local dead_max_count, dead_max_age_ms = setting_number(ARGV[9]), setting_number(ARGV[10])
local flags = ARGV[11] or ''
local may_pop = string.find(flags, 'z', 1, true) ~= nil
local has_zmscore = string.find(flags, 'm', 1, true) ~= nil
local ahead_text = string.match(flags, 'a(%d+)')
local ahead = ahead_text and setting_number(ahead_text) or 0
if ahead > 1000 then return bad_arg('claim ahead must be 0 to 1000 ms, got ' .. ahead_text) end
local cap_problem = check_events_cap(ARGV[12])
if cap_problem then return bad_arg(cap_problem) end
K.events_cap = setting_number(ARGV[12])
local m = setting_number(ARGV[13])
if not limit or not lease_ms or not holder or not m or not rate_max or not dead_max_count then
  return bad_arg('limit, lease ms, holder, rate, dead bounds and M must be numbers')
end
local ACK_FIRST = 14
local wheel_problem = wheel_keys(K, 21, ACK_FIRST + 4 * m)
if wheel_problem then return bad_arg(wheel_problem) end
-- The final records workers sent (flag 'f') are checked before anything is written
-- (docs/DESIGN.md invariant 11): three bytes each, no parse.
for i = 1, m do
  local ack_flags = ARGV[ACK_FIRST + 4 * (i - 1) + 2]
  if ack_flags == 'f' or (ack_flags ~= '' and string.find(ack_flags, 'f', 1, true)) then
    local problem = rec_final_problem(ARGV[ACK_FIRST + 4 * (i - 1) + 3])
    if problem then return bad_arg('ack ' .. i .. ' of ' .. m .. ': ' .. problem) end
  end
end

local now, now_us = now_ms_us()
-- Jobs due by `cutoff` are taken: now, or a little after it when the worker claims ahead. The
-- wheel takes whole buckets by their end, so it never claims ahead. Leases, rate limits, tokens
-- and reaps count from now.
local cutoff = K.wi and now or now + ahead
local cutoff_text = ms_text(cutoff)

local out = { now, -1, 0, '' }
-- The scores this call writes per job (ZADD c, ZADD a, ZADD lim), as text made once (prelude.lua).
local now_text = ms_text(now)
-- ".<now>" of every token this call writes.
local now_token_tail = '.' .. now_text
-- Field/value pairs of the one HSET of every record this call writes (completed and leased).
local hset = {}

-- The scores of `members` in K.a, one command on Redis >= 6.2.
local function lease_scores(members)
  if has_zmscore then return redis.call('ZMSCORE', K.a, unpack(members)) end
  local scores = {}
  for i, member in ipairs(members) do scores[i] = redis.call('ZSCORE', K.a, member) end
  return scores
end

-- The earliest head of a group an ack let run again: other workers hear of it when this call
-- leaves due jobs it cannot take itself (or takes none).
local group_woke = nil
-- What this call's acks were: grouped or not. With both sides due and an odd claim, the odd slot
-- goes to the side the worker's last finished jobs were not from, so a worker of concurrency 1
-- alternates between grouped and other jobs instead of always serving one side.
local acked_grouped, acked_other = 0, 0

-- 1. Acks first: the first write frees memory (ZREM), so a full Redis (noeviction) still lets a
-- worker drain.
if m > 0 then
  -- Each ack whose known deadline is still ahead is decided by its own ZREM: that deadline is one
  -- the server told the worker, and no lease is ever shortened (extend.lua), so the lease is valid
  -- when its member is there (docs/DESIGN.md invariant 4). One command where a read and a remove are two,
  -- and no score formatted as a double and parsed back. The rest are read, and removed below.
  -- held[i]: ack i's lease was valid and its member is gone from a; false: not there.
  local held, read, read_at = {}, nil, nil
  for i = 1, m do
    local known = ARGV[ACK_FIRST + 4 * (i - 1) + 1]
    -- Epoch ms of the same number of digits compare as text: no strtod for the usual ack.
    local ahead
    if #known == #now_text then ahead = known > now_text else ahead = (tonumber(known) or 0) > now end
    if ahead then
      held[i] = redis.call('ZREM', K.a, ARGV[ACK_FIRST + 4 * (i - 1)]) == 1
    else
      read = read or {}
      read_at = read_at or {}
      read[#read + 1] = ARGV[ACK_FIRST + 4 * (i - 1)]
      read_at[#read_at + 1] = i
    end
  end
  -- The read leases' scores by ack, made only when some were read (not at concurrency 1, usually):
  -- at one ack per call each table made and collected costs as much as the ack's own Lua.
  local scores = nil
  if read then
    scores = {}
    for first = 1, #read, UNPACK_CHUNK do
      local part = lease_scores({ unpack(read, first, math.min(#read, first + UNPACK_CHUNK - 1)) })
      for k = 1, #part do scores[read_at[first + k - 1]] = part[k] end
    end
  end
  -- Members of valid leases read above (not yet removed; made when there is one), and the
  -- completions' c entries.
  local done_members, done_c = nil, {}
  -- Where the next entries of done_c and hset go (see hset_n in step 4).
  local done_c_n, hset_n = 0, #hset
  -- Made when an ack needs them: most calls have no job with an error or progress.
  local error_ids, progress_ids = nil, nil
  local emit_completed = emits(K, 'completed')
  -- Slots the acked jobs free, per group: one HINCRBY and one re-activation per group (made at
  -- the first grouped ack).
  local freed, freed_order = nil, nil
  -- A member acked twice in one call is applied once; the second is a resend. One ack cannot be.
  local applied = m > 1 and {} or nil
  -- A letter per ack, sent as one string: one reply element for the call, where an element per ack
  -- was a Lua-to-RESP conversion each and a parsed buffer each in the worker.
  local outcomes = {}
  for i = 1, m do
    local base = ACK_FIRST + 4 * (i - 1)
    local member = ARGV[base]
    local id, g = member_id_group(member)
    local deadline = held[i] and now + 1 or (scores and scores[i] and tonumber(scores[i]))
    if applied and applied[member] then
      outcomes[i] = 'A'
    elseif deadline and deadline > now then
      if applied then applied[member] = true end
      local ack_flags = ARGV[base + 2] or ''
      if not held[i] then
        done_members = done_members or {}
        done_members[#done_members + 1] = member
      end
      done_c[done_c_n + 1], done_c[done_c_n + 2] = now_text, id
      done_c_n = done_c_n + 2
      -- Most acks have no flag but 'f' (the final record follows): the searches saved per job.
      local final = nil
      if ack_flags == 'f' then
        final, ack_flags = ARGV[base + 3], ''
      elseif ack_flags ~= '' and string.find(ack_flags, 'f', 1, true) then
        final = ARGV[base + 3]
      end
      local has_flags = ack_flags ~= ''
      if has_flags and string.find(ack_flags, 'e', 1, true) then
        error_ids = error_ids or {}
        error_ids[#error_ids + 1] = id
      end
      if has_flags and string.find(ack_flags, 'p', 1, true) then
        progress_ids = progress_ids or {}
        progress_ids[#progress_ids + 1] = id
      end
      if g then acked_grouped = acked_grouped + 1 else acked_other = acked_other + 1 end
      if g then
        if not freed then freed, freed_order = {}, {} end
        if not freed[g] then freed_order[#freed_order + 1] = g end
        freed[g] = (freed[g] or 0) + 1
      end
      hset[hset_n + 1] = id
      if final then
        hset[hset_n + 2] = final
      elseif has_flags and string.find(ack_flags, 'u', 1, true) then
        hset[hset_n + 2] = rec_completed_with_result(ARGV[base + 3])
      else
        hset[hset_n + 2] = REC_COMPLETED
      end
      hset_n = hset_n + 2
      outcomes[i] = 'O'
      if emit_completed then emit(K, 'completed', id, 'at', now, 'lease', member) end
    elseif not deadline and tonumber(ARGV[base + 1]) > now and redis.call('ZSCORE', K.c, id) then
      -- A resent ack (its reply was lost) finds the job completed, within the lease it was sent in.
      outcomes[i] = 'A'
    elseif deadline then
      outcomes[i] = 'E'
    elseif redis.call('ZSCORE', K.x, id) then
      outcomes[i] = 'C'
    else
      outcomes[i] = 'N'
    end
  end
  -- One ack (concurrency 1, every job): its letter is the string; no concatenation.
  out[4] = m == 1 and outcomes[1] or table.concat(outcomes)
  if #done_c > 0 then
    if done_members then call_chunked('ZREM', K.a, done_members, 1) end
    call_chunked('ZADD', K.c, done_c, 2)
    if error_ids then call_chunked('HDEL', K.e, error_ids, 1) end
    if progress_ids then call_chunked('HDEL', K.pg, progress_ids, 1) end
    if freed_order then
      local function release_groups()
        for _, g in ipairs(freed_order) do
          local due = group_release(K, g, now, freed[g])
          if due and (group_woke == nil or due < group_woke) then group_woke = due end
        end
      end
      -- Many groups back in turn at once: gr as a skiplist, where each ZADD is a lookup rather
      -- than a scan of a listpack of up to 128 groups (skiplist.lua).
      if #freed_order >= GROUPS_SKIPLIST_AT then as_skiplist(K.gr, release_groups) else release_groups() end
    end
  end
end

local n_at = #out + 1
out[n_at] = 0

local function finish()
  call_chunked('HSET', K.j, hset, 2)
  -- The wheel's own fields go after the jobs (wheel.lua wheel_reply).
  if K.wi then wheel_reply(K, out) end
  -- Last, TIME in µs: `now` is rounded down to the ms, and a worker that starts jobs claimed
  -- ahead at their due time bounds the server clock by this exact reading instead.
  out[#out + 1] = now_us
  return out
end

if limit <= 0 then
  if group_woke then redis.call('PUBLISH', K.w, ms_text(math.max(group_woke, now))) end
  return finish()
end

-- 2. The gate: one command answers for pause, priorities and groups together (an empty ZSET does
-- not exist), so a queue that uses none of them pays one EXISTS per call.
local special = redis.call('EXISTS', K.z, K.p, K.r, K.gw, K.gr)
if special > 0 and redis.call('EXISTS', K.z) == 1 then
  -- Paused: nothing is taken, whatever the worker believes. The worker waits for the resume
  -- message (or its safety timer), not for a due time it may not act on. Expired leases still go
  -- back, so a dead worker's job waits for the resume like any other.
  out[3] = 1
  local lease_head = redis.call('ZRANGE', K.a, '0', '0', 'WITHSCORES')
  if lease_head[2] and tonumber(lease_head[2]) <= now then
    reap_expired(K, now, REAP_ON_CLAIM, dead_max_count, dead_max_age_ms)
  end
  return finish()
end

local next_at = -1
local function sooner(at)
  if next_at == -1 or at < next_at then next_at = at end
end

-- The queue rate limit (today's limiter): a sliding log of recent starts shared by all workers.
-- When limited, the window reopens once its oldest start (or this call's, if it is the first)
-- leaves it.
local window_reopens = -1
if rate_max > 0 then
  redis.call('ZREMRANGEBYSCORE', K.lim, '-inf', now - rate_per_ms)
  local allowed = rate_max - redis.call('ZCARD', K.lim)
  if allowed < limit then
    limit = math.max(allowed, 0)
    local oldest = redis.call('ZRANGE', K.lim, 0, 0, 'WITHSCORES')
    window_reopens = (oldest[2] and tonumber(oldest[2]) or now) + rate_per_ms + 1
  end
end

-- Groups (step 3, when gw or gr exists): gw's heads by rank move to gr when due (the first not due
-- is when to look again); then rounds over gr in turn order, one job per group per round, up to
-- half of `limit` when other due jobs wait (`d_ids`, or r), else all of it, so neither side holds
-- the other back (the odd slot of an odd claim alternates, by what the acks of this call were).
-- A taken group goes to the back of gr (its next job is due and it has a slot), to gw at its next
-- job's due, or out of both (full or empty). Returns the taken ids, their dues
-- and groups; their slots are counted in gc.
local function take_groups(limit, d_ids)
  local g_ids, g_due, g_groups = {}, {}, {}
  -- Groups whose head's time has come go from gw to gr. The head of gw first (one score): when
  -- it is not due, neither is any other, and no score of a group not due is formatted as a double.
  local gw_head = redis.call('ZRANGE', K.gw, '0', '0', 'WITHSCORES')
  local gw_at = gw_head[2] and tonumber(gw_head[2])
  if gw_at and gw_at > cutoff then
    sooner(gw_at)
  elseif gw_at then
    local gw_heads = redis.call('ZRANGEBYSCORE', K.gw, '-inf', cutoff_text, 'WITHSCORES', 'LIMIT', '0', int_text(limit + 1))
    local promoted, turns = {}, {}
    for i = 1, #gw_heads, 2 do
      promoted[#promoted + 1] = gw_heads[i]
      turns[#turns + 1] = int_text(group_next_turn(K))
      turns[#turns + 1] = gw_heads[i]
    end
    redis.call('ZREM', K.gw, unpack(promoted))
    redis.call('ZADD', K.gr, unpack(turns))
    if #promoted == limit + 1 then
      -- Every group read was due: more may be.
      sooner(now)
    else
      local following = redis.call('ZRANGE', K.gw, '0', '0', 'WITHSCORES')
      if following[2] then sooner(tonumber(following[2])) end
    end
  end
  if redis.call('EXISTS', K.gr) == 0 then return g_ids, g_due, g_groups end
  -- Other due jobs: the default class's read (up to limit) and all of r (every job there is due).
  local others = #d_ids + redis.call('ZCARD', K.r)
  local budget = limit
  if others > 0 then
    -- Half each; the odd slot alternates (see acked_grouped); the groups also take what the
    -- others cannot fill.
    local half = math.floor(limit / 2)
    if limit % 2 == 1 and acked_other >= acked_grouped then half = half + 1 end
    budget = math.max(half, limit - others)
  end
  if budget <= 0 then
    sooner(now)
    return g_ids, g_due, g_groups
  end
  -- taken_order: the groups taken from, in order (their counts in gn change once each).
  local taken_members, taken_from, taken_order = {}, {}, {}
  local ready = redis.call('ZRANGE', K.gr, '0', int_text(budget - 1))
  while #ready > 0 do
    local leaving, requeue, to_gw = {}, {}, {}
    -- A group whose slot was counted and then not used gives it back.
    local function unclaim(g)
      if redis.call('HINCRBY', K.gc, g, '-1') <= 0 then redis.call('HDEL', K.gc, g) end
    end
    for _, g in ipairs(ready) do
      if #g_ids >= budget then break end
      -- Jobs taken from g by earlier rounds are still in gq until the end: skip past them.
      local offset = taken_from[g] or 0
      local heads = group_heads(K, g, offset, 2)
      local head = heads[1]
      local due = head and group_member_due(g, head)
      if not head or due > cutoff then
        -- Not possible while every path keeps the group states; repaired rather than trusted.
        leaving[#leaving + 1] = g
        if head then
          to_gw[#to_gw + 1] = ms_text(due)
          to_gw[#to_gw + 1] = g
        end
      else
        local running = redis.call('HINCRBY', K.gc, g, '1')
        local token_at = 0
        if running > group_max then
          -- Full (a caller that did not know the concurrency put it in turn): out of turn until
          -- one of its leases ends.
          unclaim(g)
          leaving[#leaving + 1] = g
        elseif group_rate_max > 0 then
          token_at = group_take_token(K, g, now, group_rate_max, group_rate_per)
        end
        if token_at > 0 then
          -- Its rate limit: the group waits in gw for its next token.
          unclaim(g)
          leaving[#leaving + 1] = g
          to_gw[#to_gw + 1] = ms_text(token_at)
          to_gw[#to_gw + 1] = g
          sooner(token_at)
        elseif running <= group_max then
          taken_members[#taken_members + 1] = head
          if offset == 0 then taken_order[#taken_order + 1] = g end
          taken_from[g] = offset + 1
          g_ids[#g_ids + 1] = group_member_id(g, head)
          g_due[#g_due + 1] = due
          g_groups[#g_groups + 1] = g
          local following = heads[2]
          local following_due = following and group_member_due(g, following)
          if running < group_max and following and following_due <= cutoff then
            requeue[#requeue + 1] = int_text(group_next_turn(K))
            requeue[#requeue + 1] = g
          else
            leaving[#leaving + 1] = g
            if running < group_max and following then
              to_gw[#to_gw + 1] = ms_text(following_due)
              to_gw[#to_gw + 1] = g
            end
          end
        end
      end
    end
    if #leaving > 0 then redis.call('ZREM', K.gr, unpack(leaving)) end
    if #to_gw > 0 then redis.call('ZADD', K.gw, unpack(to_gw)) end
    -- Back of the turns: ZADD with a new turn moves it.
    if #requeue > 0 then redis.call('ZADD', K.gr, unpack(requeue)) end
    if #g_ids >= budget or (#requeue == 0 and #leaving == 0) then break end
    ready = redis.call('ZRANGE', K.gr, '0', int_text(budget - #g_ids - 1))
  end
  if #taken_members > 0 then
    call_chunked('ZREM', K.gq, taken_members, 1)
    for _, g in ipairs(taken_order) do group_count(K, g, -taken_from[g]) end
  end
  -- Groups still in turn mean due grouped jobs left: look again at once.
  if redis.call('EXISTS', K.gr) == 1 then sooner(now) end
  return g_ids, g_due, g_groups
end

-- Steps 3 and 4, as one function: a claim that reaps leases (step 5) takes again with the room
-- it has left, so a job whose holder crashed starts in the same call.
local held_back = false
local function take_and_lease(limit)
  -- 3. Take up to `limit` due jobs: ids and their dues, in the order they are leased.
  local take_ids, take_due, take_group = {}, {}, {}
  if limit > 0 and K.wi then
    local ids, dues, wheel_next = wheel_take(K, limit, now)
    take_ids, take_due = ids, dues
    if wheel_next and wheel_next ~= -1 then sooner(wheel_next) end
  elseif limit > 0 then
    -- The default class: up to limit + 1 due heads in one read (one more than taken: more are
    -- due), and the first head not due, the next due time, when fewer are.
    local d_ids, d_due = {}, {}
    local popped = false
    if limit == 1 and special == 0 and may_pop then
      -- A claim of one pops the head, and puts it back when it is not due: one command where
      -- ZRANGE + ZREM are two. Larger claims read first, so a claim at the edge of the due jobs
      -- never pops and rewrites jobs it cannot take.
      popped = true
      local head = redis.call('ZPOPMIN', K.s)
      if head[2] then
        local due = tonumber(head[2])
        if due <= cutoff then
          -- The next head is not read: this worker is full now and claims again when it acks.
          d_ids[1], d_due[1] = head[1], due
        else
          redis.call('ZADD', K.s, head[2], head[1])
          sooner(due)
        end
      end
    else
      -- The due heads only, up to limit + 1 (one more than taken says more are due): a claim at
      -- a due time with free slots to spare read limit + 1 heads, most of them not due, and Redis
      -- formatted each score as a double (glibc's %.17g) for Lua to parse back.
      -- Numbers as text: redis.call turns a Lua number into text with '%.17g' (prelude.lua).
      local heads = redis.call('ZRANGEBYSCORE', K.s, '-inf', cutoff_text, 'WITHSCORES', 'LIMIT', '0', int_text(limit + 1))
      local n_due = #heads / 2
      for i = 1, math.min(n_due, limit) do
        d_ids[i], d_due[i] = heads[2 * i - 1], tonumber(heads[2 * i])
      end
      if n_due > limit then
        -- Due by the cutoff, perhaps not yet by now (a claim ahead).
        sooner(math.max(tonumber(heads[2 * limit + 2]), now))
      else
        -- Every due job was read: the next head (by rank, before anything is removed) is not due.
        local rank = int_text(n_due)
        local following = redis.call('ZRANGE', K.s, rank, rank, 'WITHSCORES')
        if following[2] then sooner(tonumber(following[2])) end
      end
    end

    if special == 0 then
      take_ids, take_due = d_ids, d_due
      if #take_ids > 0 and not popped then redis.call('ZREM', K.s, unpack(take_ids)) end
    else
      -- Priorities: promote p's due heads to r, then merge r with the default class's due jobs by
      -- score (the default class is priority 0): lower priority first, then due order.
      local p_heads = redis.call('ZRANGE', K.p, '0', int_text(PROMOTE), 'WITHSCORES')
      -- More due jobs in p than one call promotes: one of them may outrank everything in r, so
      -- this call takes nothing from r or the default class and answers "look again now". Each
      -- call stays bounded, and the order among due jobs stays strict (a burst costs a few calls).
      local promote_capped = false
      if #p_heads > 0 then
        local zr, rm = {}, {}
        for i = 1, #p_heads, 2 do
          local member, due = p_heads[i], tonumber(p_heads[i + 1])
          -- By now, not the cutoff: every job in r is due, and any claim takes from r (one that
          -- does not reach ahead too). A prioritized job is not claimed ahead.
          if due > now then
            sooner(due)
            break
          end
          if #rm == PROMOTE then
            sooner(now)
            promote_capped = true
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
      end
      local g_ids, g_due, g_groups = take_groups(limit, d_ids)
      local room = promote_capped and 0 or limit - #g_ids
      local r_heads = room > 0 and redis.call('ZRANGE', K.r, '0', int_text(room), 'WITHSCORES') or {}
      local di, ri = 1, 1
      local from_s, from_r = 0, {}
      while #take_ids < room and (di <= #d_ids or ri < #r_heads) do
        local d_score = di <= #d_ids and (PLACE_PRIO_BASE * PLACE_TWO42 + d_due[di]) or nil
        local r_score = ri < #r_heads and tonumber(r_heads[ri + 1]) or nil
        if r_score and (not d_score or r_score < d_score) then
          local member = r_heads[ri]
          take_ids[#take_ids + 1] = prio_member_id(member)
          take_due[#take_due + 1] = r_score % PLACE_TWO42
          from_r[#from_r + 1] = member
          ri = ri + 2
        else
          take_ids[#take_ids + 1] = d_ids[di]
          take_due[#take_due + 1] = d_due[di]
          from_s = from_s + 1
          di = di + 1
        end
      end
      if #from_r > 0 then redis.call('ZREM', K.r, unpack(from_r)) end
      if from_s > 0 then redis.call('ZREM', K.s, unpack(d_ids, 1, from_s)) end
      -- Due jobs left in r (all of r is due) or in s: look again at once.
      if ri < #r_heads or di <= #d_ids then sooner(now) end
      for i, id in ipairs(g_ids) do
        take_ids[#take_ids + 1] = id
        take_due[#take_due + 1] = g_due[i]
        take_group[#take_ids] = g_groups[i]
      end
    end
  elseif rate_max > 0 then
    -- Held back by the rate limit: is anything due that it keeps waiting?
    held_back = true
  end

  -- 4. Lease: one read and one write of the records and one ZADD of the members, for the batch.
  local n = 0
  if #take_ids > 0 then
    local records
    if #take_ids <= UNPACK_CHUNK then
      records = redis.call('HMGET', K.j, unpack(take_ids))
    else
      records = {}
      for first = 1, #take_ids, UNPACK_CHUNK do
        local part = redis.call('HMGET', K.j, unpack(take_ids, first, math.min(#take_ids, first + UNPACK_CHUNK - 1)))
        for k = 1, #part do records[first + k - 1] = part[k] end
      end
    end
    local deadline = ms_text(now + lease_ms)
    local zadd, starts = {}, {}
    local emit_claimed = emits(K, 'claimed')
    -- Where the next entries of hset, zadd and out go: counted here, where `#t + 1` searched each
    -- table's array part for its end, nine times per job.
    local hset_n, zadd_n, out_n = #hset, 0, #out
    for i, id in ipairs(take_ids) do
      local rec = records[i]
      local h, why = nil, 'no record'
      if rec then h, why = rec_parse(rec) end
      if h and not h.completed and not h.cancelled then
        local claims = h.claims % MAX_CLAIMS + 1
        local due = take_due[i]
        local leased = rec_claimed(rec, h, h.attempts + 1, claims, now, due, holder)
        -- The member "<claims>.<now>|<id>" made in one concatenation (one new string, where the
        -- token and then the member were two). claims < 2^16: '%d' is exact on any build, and
        -- cheaper than `..`'s float format '%.14g'; a first claim needs no format at all.
        local member = (claims == 1 and '1' or string.format('%d', claims)) .. now_token_tail .. '|' .. id
        -- A grouped job's member names its group, so whatever ends the lease frees the slot
        -- without reading the record.
        if take_group[i] then member = member .. '\0' .. take_group[i] end
        hset[hset_n + 1], hset[hset_n + 2] = id, leased
        hset_n = hset_n + 2
        zadd[zadd_n + 1], zadd[zadd_n + 2] = deadline, member
        zadd_n = zadd_n + 2
        if rate_max > 0 then
          starts[#starts + 1] = now_text
          starts[#starts + 1] = member
        end
        -- The token is the member up to its '|': the worker slices it there, not from a reply
        -- element of its own (one Lua-to-RESP conversion and one client buffer less per job).
        out[out_n + 1], out[out_n + 2], out[out_n + 3] = member, leased, due
        out_n = out_n + 3
        n = n + 1
        if emit_claimed then
          emit(K, 'claimed', id, 'attempt', h.attempts + 1, 'runAt', due, 'at', now, 'holder', holder)
        end
      else
        -- A waiting entry without a readable record can only come from outside delayq (a manual
        -- HDEL, a newer writer). It is buried with its reason rather than dropped, so it is seen.
        -- A grouped one was counted in its group: that slot is freed, as no lease holds it.
        if take_group[i] then group_release(K, take_group[i], now) end
        if h then why = 'record is final (completed or cancelled) but the job was waiting' end
        local name = rec and 'BadRecord' or 'MissingJob'
        local message = rec and ('record cannot be read: ' .. tostring(why))
          or 'job data missing from Redis (removed outside delayq)'
        redis.call('HSET', K.e, id, cjson.encode({ name = name, message = message, at = now, attempt = 0 }))
        if rec then
          bury(K, id, rec, now, 0, dead_max_count, dead_max_age_ms)
        else
          -- Nothing to keep in j: the dead entry and the error say what happened.
          redis.call('ZADD', K.d, now, id)
          redis.call('HINCRBY', K.n, 'dead', 1)
          emit(K, 'dead', id, 'attempt', 0, 'at', now)
          trim_dead(K, now, dead_max_count, dead_max_age_ms)
        end
      end
    end
    if n > 0 then
      if n >= LEASES_SKIPLIST_AT then
        as_skiplist(K.a, function() call_chunked('ZADD', K.a, zadd, 2) end)
      else
        call_chunked('ZADD', K.a, zadd, 2)
      end
      if #starts > 0 then call_chunked('ZADD', K.lim, starts, 2) end
    end
  end
  return n
end

local n = take_and_lease(limit)
out[n_at] = n

-- 5. When to look again. Held back by the rate limit with due jobs waiting: when the window lets
-- the next job start.
if window_reopens > 0 and (held_back or next_at == now) then next_at = window_reopens end
-- The earliest lease deadline, only when the batch was not full (the worker is about to sleep;
-- a full batch means it claims again as soon as a slot frees). An expired one is reaped here, so
-- a crashed worker's job does not wait for a Reaper tick.
if n < asked_limit then
  local lease_head = redis.call('ZRANGE', K.a, '0', '0', 'WITHSCORES')
  if lease_head[2] then
    local head = tonumber(lease_head[2])
    if head <= now then
      local returned = reap_expired(K, now, REAP_ON_CLAIM, dead_max_count, dead_max_age_ms)
      if returned > 0 then
        sooner(now)
        redis.call('PUBLISH', K.w, now_text)
        if n < limit then
          -- Reaped jobs may be prioritized: the gate's answer is read again.
          special = redis.call('EXISTS', K.p, K.r, K.gw, K.gr)
          n = n + take_and_lease(limit - n)
          out[n_at] = n
        end
      end
      lease_head = redis.call('ZRANGE', K.a, '0', '0', 'WITHSCORES')
      if lease_head[2] then sooner(tonumber(lease_head[2])) end
    else
      sooner(head)
    end
  end
end
if group_woke and next_at ~= -1 and next_at <= now then
  redis.call('PUBLISH', K.w, now_text)
end
out[2] = next_at
return finish()
