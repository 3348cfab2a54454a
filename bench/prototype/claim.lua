-- claim (prototype of layout 2, docs/ARCHITECTURE.md §4.2): ack the jobs a worker finished,
-- then lease up to `limit` due jobs to it, in one call. Covers the fast path (default class),
-- priorities among due jobs, the pause flag, and groups (per-group concurrency, turns among
-- ready groups); per-group rate limits, the queue rate limit, reap-on-claim, the missing-record
-- path and the known-deadline rule for a resent ack are left out of the prototype (the design
-- note gives them).
--
-- KEYS[1] s   ZSET id -> due ms: waiting jobs of the default class
-- KEYS[2] p   ZSET "<prio>:<id>" -> due ms: waiting prioritized jobs, not yet promoted
-- KEYS[3] r   ZSET "<prio>:<id>" -> (prio + 1024) * 2^42 + due: due prioritized jobs
-- KEYS[4] z   STRING present while the queue is paused
-- KEYS[5] j   HASH id -> record (header + payload)
-- KEYS[6] a   ZSET "<token>|<id>" -> lease deadline ms
-- KEYS[7] c   ZSET id -> completed at ms
-- KEYS[8] e   HASH id -> last error
-- KEYS[9] gq  ZSET, all scores 0: "<group>\0<due: 6 bytes BE><id>" of waiting grouped jobs
-- KEYS[10] gw ZSET group -> due ms of its head: groups with a free slot, head not due
-- KEYS[11] gr ZSET group -> turn: groups with a free slot and a due head, lowest turn first
-- KEYS[12] gc HASH group -> running count
-- ARGV[1] limit (0: ack only), ARGV[2] lease ms, ARGV[3] holder number (the worker's entry in the
--         worker registry), ARGV[4] group concurrency, ARGV[5] M acks, then 2 per ack: lease
--         member ("<token>|<id>" or "<token>|<id>\0<group>", as the claim returned it), '1' when
--         the job had a last error (claim reply's header) else '0'
-- Returns: { now, next_at, paused, M results ('OK' | 'ALREADY' | 'LOST <why>'), n, then 4 per job:
--          lease member, token, record (new header + payload), due }
-- Guarantee: acks are fenced by the lease member (token and id) and the deadline; a job is leased
--          only when due by TIME; among due jobs the lower priority goes first, equal priorities
--          in due order (the default class is priority 0); nothing is leased while paused; a
--          group never has more than `group concurrency` jobs leased, and groups with due jobs
--          take turns (each turn one job), half of a batch when other due jobs wait.

if redis.replicate_commands then redis.replicate_commands() end

local K = {
  s = KEYS[1], p = KEYS[2], r = KEYS[3], z = KEYS[4], j = KEYS[5], a = KEYS[6], c = KEYS[7], e = KEYS[8],
  gq = KEYS[9], gw = KEYS[10], gr = KEYS[11], gc = KEYS[12],
}
local limit, lease_ms, holder = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local group_max, m = tonumber(ARGV[4]), tonumber(ARGV[5])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

-- 2^42 ms reaches the year 2109; priorities -1024..1023 above it keep every score an exact double.
local TWO42 = 4398046511104
local PRIO_BASE = 1024
-- Prioritized jobs promoted from p to r per call at most; the rest on the next call.
local PROMOTE = 1000
-- Record header (docs/ARCHITECTURE.md §3): format byte, flags byte, a second flags byte when flag 0x80 is
-- set, then the claim block when flag 0x01 is set: attempts, claims, claim ms, due ms, holder.
local CLAIM_BLOCK = '>HHI6I6I4'
local CLAIM_BLOCK_LEN = 20

local out = { now, -1, 0 }
-- Field/value pairs for the one HSET of the records this call writes (completed and leased).
local hset = {}
-- A completed record without a kept result: format 1, flags 0x80 (a second flags byte), 0x08 in
-- it (completed); the completion time is c's score.
local COMPLETED_RECORD = struct.pack('>BBB', 1, 0x80, 0x08)
local function flush_records()
  if #hset > 0 then redis.call('HSET', K.j, unpack(hset)) end
end

-- Groups. A group with waiting jobs and a free slot is in gw (head not due) or gr (head due);
-- a full or empty group is in neither. Turns: gr's score; a group served goes to the back.
local last_turn = nil
local function next_turn()
  if last_turn == nil then
    local tail = redis.call('ZRANGE', K.gr, -1, -1, 'WITHSCORES')
    last_turn = tail[2] and tonumber(tail[2]) or 0
  end
  last_turn = last_turn + 1
  return last_turn
end
-- The head of group g's waiting jobs: member and due, or nil; and the one after it when asked.
local function group_heads(g, count)
  return redis.call('ZRANGEBYLEX', K.gq, '[' .. g .. '\0', '(' .. g .. '\1', 'LIMIT', 0, count)
end
local function member_due(g, member)
  return (struct.unpack('>I6', member, #g + 2))
end
-- Groups to put back in turn (gr) or in waiting (gw), written with one ZADD each at the end.
local to_gr, to_gw = {}, {}
-- Put group g (not in gw or gr, with a free slot) where its head says.
local function activate(g)
  local head = group_heads(g, 1)[1]
  if not head then return end
  local due = member_due(g, head)
  if due <= now then
    to_gr[#to_gr + 1] = next_turn()
    to_gr[#to_gr + 1] = g
  else
    to_gw[#to_gw + 1] = due
    to_gw[#to_gw + 1] = g
  end
end
local function flush_groups()
  if #to_gr > 0 then redis.call('ZADD', K.gr, unpack(to_gr)) end
  if #to_gw > 0 then redis.call('ZADD', K.gw, unpack(to_gw)) end
  to_gr, to_gw = {}, {}
end

-- 1. Acks first: the first write of a script must free memory, so a full Redis (noeviction) can
-- still drain (today's rule, kept).
if m > 0 then
  local members = {}
  for i = 1, m do members[i] = ARGV[4 + 2 * i] end
  local scores = redis.call('ZMSCORE', K.a, unpack(members))
  local done_m, done_ids, done_c, err_ids, freed = {}, {}, {}, {}, {}
  for i = 1, m do
    local member = members[i]
    local rest = string.sub(member, string.find(member, '|', 1, true) + 1)
    local zero = string.find(rest, '\0', 1, true)
    local id = zero and string.sub(rest, 1, zero - 1) or rest
    local deadline = scores[i] and tonumber(scores[i])
    if deadline and deadline > now then
      done_m[#done_m + 1] = member
      done_ids[#done_ids + 1] = id
      done_c[#done_c + 1] = now
      done_c[#done_c + 1] = id
      if ARGV[5 + 2 * i] == '1' then err_ids[#err_ids + 1] = id end
      if zero then
        local g = string.sub(rest, zero + 1)
        freed[g] = (freed[g] or 0) + 1
      end
      out[#out + 1] = 'OK'
    elseif not deadline and redis.call('ZSCORE', K.c, id) then
      out[#out + 1] = 'ALREADY'
    else
      out[#out + 1] = deadline and 'LOST expired' or 'LOST not held'
    end
  end
  if #done_m > 0 then
    redis.call('ZREM', K.a, unpack(done_m))
    redis.call('ZADD', K.c, unpack(done_c))
    if #err_ids > 0 then redis.call('HDEL', K.e, unpack(err_ids)) end
    -- The record becomes a completed record (header only here; the result when one is kept),
    -- written by the same HSET as the records the claim below leases: one command for both.
    for _, id in ipairs(done_ids) do
      hset[#hset + 1] = id
      hset[#hset + 1] = COMPLETED_RECORD
    end
    -- Free the groups' slots; a group that was full has a slot again: back into gw or gr.
    for g, k in pairs(freed) do
      local running = redis.call('HINCRBY', K.gc, g, -k)
      if running <= 0 then redis.call('HDEL', K.gc, g) end
      if running + k >= group_max and running < group_max then activate(g) end
    end
    flush_groups()
  end
end

local n_at = #out + 1
out[n_at] = 0
if limit <= 0 then
  flush_records()
  return out
end

-- 2. Anything but the fast path? One command answers for pause, priorities and groups together
-- (an empty ZSET does not exist), so a queue that uses none of them pays one EXISTS per call.
local special = redis.call('EXISTS', K.z, K.p, K.r, K.gw, K.gr)
if special > 0 and redis.call('EXISTS', K.z) == 1 then
  out[3] = 1
  flush_records()
  return out
end

-- 3. Take. The default class: up to limit + 1 heads in one read; the first one not due is the
-- next due time.
local d_ids, d_due = {}, {}
local next_at = -1
-- A claim of one (concurrency 1) pops the head and puts it back when it is not due: one command
-- where ZRANGE + ZREM are two. Larger claims read first, so a claim at the frontier of due jobs
-- (some due, most not) never pops and rewrites what it cannot take.
local popped = limit == 1 and special == 0
if popped then
  local head = redis.call('ZPOPMIN', K.s)
  if head[2] then
    local due = tonumber(head[2])
    if due <= now then
      d_ids[1], d_due[1] = head[1], due
      next_at = now
    else
      redis.call('ZADD', K.s, head[2], head[1])
      next_at = due
    end
  end
else
  local heads = redis.call('ZRANGE', K.s, 0, limit, 'WITHSCORES')
  for i = 1, #heads, 2 do
    local due = tonumber(heads[i + 1])
    if due <= now and #d_ids < limit then
      d_ids[#d_ids + 1] = heads[i]
      d_due[#d_due + 1] = due
    else
      next_at = due
      break
    end
  end
end

local take_ids, take_due, take_group = {}, {}, {}
if special > 0 then
  local function sooner(at)
    if at ~= nil and (next_at == -1 or at < next_at) then next_at = at end
  end

  -- Priorities: p's heads by rank, one read: the due ones are promoted to r, the first one not
  -- due is when to look again.
  local p_heads = redis.call('ZRANGE', K.p, 0, PROMOTE, 'WITHSCORES')
  if #p_heads > 0 then
    local zr, rm = {}, {}
    for i = 1, #p_heads, 2 do
      local member, due = p_heads[i], tonumber(p_heads[i + 1])
      if due > now then
        sooner(due)
        break
      end
      if #rm == PROMOTE then
        sooner(now)
        break
      end
      local prio = tonumber(string.match(member, '^(-?%d+):'))
      zr[#zr + 1] = (prio + PRIO_BASE) * TWO42 + due
      zr[#zr + 1] = member
      rm[#rm + 1] = member
    end
    if #rm > 0 then
      redis.call('ZADD', K.r, unpack(zr))
      redis.call('ZREM', K.p, unpack(rm))
    end
  end

  -- Groups: gw's heads by rank (due groups move to gr, the first not due is when to look again),
  -- then rounds over gr in turn order, one job per group per round; half the batch when other
  -- due jobs wait, so neither side holds the other back.
  local g_ids, g_due, g_groups = {}, {}, {}
  local gw_heads = redis.call('ZRANGE', K.gw, 0, limit, 'WITHSCORES')
  if #gw_heads > 0 then
    local promoted = {}
    for i = 1, #gw_heads, 2 do
      local due = tonumber(gw_heads[i + 1])
      if due > now then
        sooner(due)
        break
      end
      promoted[#promoted + 1] = gw_heads[i]
      to_gr[#to_gr + 1] = next_turn()
      to_gr[#to_gr + 1] = gw_heads[i]
    end
    if #promoted > 0 then redis.call('ZREM', K.gw, unpack(promoted)) end
    if #promoted * 2 == #gw_heads and #gw_heads == 2 * (limit + 1) then sooner(now) end
    flush_groups()
  end
  local others = #d_ids > 0 or redis.call('EXISTS', K.r) == 1
  local budget = others and math.ceil(limit / 2) or limit
  local taken_members, leaving = {}, {}
  local ready = redis.call('ZRANGE', K.gr, 0, budget - 1)
  while #ready > 0 do
    for _, g in ipairs(ready) do
      if #g_ids >= budget then break end
      local heads = group_heads(g, 2)
      local head = heads[1]
      local due = head and member_due(g, head)
      if not head or due > now then
        -- Not possible while every path keeps the group states; repaired rather than trusted.
        leaving[#leaving + 1] = g
        if head then
          to_gw[#to_gw + 1] = due
          to_gw[#to_gw + 1] = g
        end
      else
        taken_members[#taken_members + 1] = head
        g_ids[#g_ids + 1] = string.sub(head, #g + 8)
        g_due[#g_due + 1] = due
        g_groups[#g_groups + 1] = g
        local running = redis.call('HINCRBY', K.gc, g, 1)
        local following = heads[2]
        local following_due = following and member_due(g, following)
        if running < group_max and following and following_due <= now then
          -- Back of the queue of turns: ZADD with a new turn moves it.
          to_gr[#to_gr + 1] = next_turn()
          to_gr[#to_gr + 1] = g
        else
          leaving[#leaving + 1] = g
          if running < group_max and following then
            to_gw[#to_gw + 1] = following_due
            to_gw[#to_gw + 1] = g
          end
        end
      end
    end
    local requeued = #to_gr > 0
    if #leaving > 0 then redis.call('ZREM', K.gr, unpack(leaving)) end
    leaving = {}
    flush_groups()
    if #g_ids >= budget or not requeued then break end
    ready = redis.call('ZRANGE', K.gr, 0, budget - #g_ids - 1)
  end
  if #taken_members > 0 then
    redis.call('ZREM', K.gq, unpack(taken_members))
    -- Groups still in turn mean due jobs left: look again at once.
    if redis.call('EXISTS', K.gr) == 1 then sooner(now) end
  end

  -- Merge r's head with the default class's due jobs by (priority, due); default is priority 0.
  local room = limit - #g_ids
  local r_heads = room > 0 and redis.call('ZRANGE', K.r, 0, room, 'WITHSCORES') or {}
  local di, ri = 1, 1
  local from_s, from_r = 0, {}
  while #take_ids < room and (di <= #d_ids or ri < #r_heads) do
    local d_score = di <= #d_ids and (PRIO_BASE * TWO42 + d_due[di]) or nil
    local r_score = ri < #r_heads and tonumber(r_heads[ri + 1]) or nil
    if r_score and (not d_score or r_score < d_score) then
      local member = r_heads[ri]
      take_ids[#take_ids + 1] = string.sub(member, string.find(member, ':', 1, true) + 1)
      take_due[#take_due + 1] = r_score % TWO42
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
else
  take_ids, take_due = d_ids, d_due
  if #take_ids > 0 and not popped then redis.call('ZREM', K.s, unpack(take_ids)) end
end

-- 4. Lease: one read and one write of the records, one ZADD of the lease members, for the batch.
local n = 0
if #take_ids > 0 then
  local records = redis.call('HMGET', K.j, unpack(take_ids))
  local deadline = now + lease_ms
  local zadd = {}
  for i, id in ipairs(take_ids) do
    local record = records[i]
    if record then
      local format, flags = struct.unpack('>BB', record)
      local at = 3
      local more = ''
      if flags >= 128 then
        more = string.sub(record, 3, 3)
        at = 4
      end
      local attempts, claims = 0, 0
      local rest = at
      if flags % 2 == 1 then
        attempts, claims = struct.unpack('>HH', record, at)
        rest = at + CLAIM_BLOCK_LEN
      else
        flags = flags + 1
      end
      claims = claims + 1
      local due = take_due[i]
      local updated = struct.pack('>BB', format, flags) .. more
        .. struct.pack(CLAIM_BLOCK, attempts + 1, claims, now, due, holder) .. string.sub(record, rest)
      local token = claims .. '.' .. now
      -- A grouped job's member names its group, so whatever ends the lease frees the slot
      -- without reading the record.
      local member = token .. '|' .. id
      if take_group[i] then member = member .. '\0' .. take_group[i] end
      hset[#hset + 1] = id
      hset[#hset + 1] = updated
      zadd[#zadd + 1] = deadline
      zadd[#zadd + 1] = member
      out[#out + 1] = member
      out[#out + 1] = token
      out[#out + 1] = updated
      out[#out + 1] = due
      n = n + 1
    end
  end
  if n > 0 then redis.call('ZADD', K.a, unpack(zadd)) end
end
flush_records()
out[n_at] = n

-- 5. When to look again: the next due job, or the earliest lease deadline when the batch was not
-- full (the worker will sleep; a full batch means it claims again as soon as slots free).
if n < limit then
  local lease_head = redis.call('ZRANGE', K.a, 0, 0, 'WITHSCORES')
  if lease_head[2] and (next_at == -1 or tonumber(lease_head[2]) < next_at) then
    next_at = tonumber(lease_head[2])
  end
end
out[2] = next_at
return out
