-- Groups (issue 16; docs/ARCHITECTURE.md §3.1, §3.5, §4.2): waiting grouped jobs, group states
-- and re-activation, shared by every script that adds, takes, puts back or removes a grouped job,
-- or ends the lease of one.
--
-- Keys (in K): gq ZSET, all scores 0, member "<group>\0<due: 6 bytes BE><id>" (ZRANGEBYLEX orders
-- a group's jobs by due time); gw ZSET group -> due of its head (a free slot, head not due); gr
-- ZSET group -> turn (a free slot, head due: served lowest turn first); gc HASH group -> running
-- count (the field is deleted at 0), plus GROUP_PAUSED while the group is paused, and
-- "<group>\0l" -> the group's rate bucket; gn ZSET group -> its waiting jobs (its members in gq:
-- kept here with gq, so groups are listed by backlog without reading their jobs).
-- A paused group's count is GROUP_PAUSED or more, above any bound: every path that would put it
-- in turn (add, ack, fail, release, reap, cancel) finds it full and leaves it out of gw and gr, so
-- the claim never sees it and pays nothing for pauses (group-pause.lua, group-resume.lua).
-- K.gmax: the group concurrency the caller knows (from the queue's config record); 0 or nil means
-- unknown: a group with waiting jobs is then put in turn whatever its count, and the claim, which
-- always knows it, takes the group out when it is full. So a caller that does not know the value
-- can make a claim look once too often, never make a group wait for nothing.
-- Needs struct (every Redis since 2.6) and now_ms (prelude.lua).

-- Added to a paused group's running count in gc (2^40: counts stay exact doubles, and no bound
-- reaches it; MAX_GROUP_CONCURRENCY in src/definition/definition.ts is far below).
local GROUP_PAUSED = 1099511627776

-- The lex range of group g's jobs in gq: no group name holds 0x00 or 0x01 (control characters are
-- refused), so no other group's members fall in it.
local function group_range(g)
  return '[' .. g .. '\0', '(' .. g .. '\1'
end

-- The gq member of job `id` of group g due at `due`.
local function group_member(g, due, id)
  return g .. '\0' .. struct.pack('>I6', due) .. id
end

-- The due time and id in a gq member of group g.
local function group_member_due(g, member)
  return (struct.unpack('>I6', member, #g + 2))
end
local function group_member_id(g, member)
  return string.sub(member, #g + 8)
end

-- `delta` jobs of group g came into gq (or left it, negative): its count in gn follows, and a
-- group with none waiting leaves gn.
local function group_count(K, g, delta)
  if tonumber(redis.call('ZINCRBY', K.gn, int_text(delta), g)) <= 0 then redis.call('ZREM', K.gn, g) end
end

-- Up to `count` of group g's waiting jobs from `offset` on, in due order (gq members).
local function group_heads(K, g, offset, count)
  local from, to = group_range(g)
  return redis.call('ZRANGEBYLEX', K.gq, from, to, 'LIMIT', int_text(offset), int_text(count))
end

-- The turns of one script call: the next turn is one after gr's last, read once per call.
local group_last_turn = nil
local function group_next_turn(K)
  if group_last_turn == nil then
    local tail = redis.call('ZRANGE', K.gr, '-1', '-1', 'WITHSCORES')
    group_last_turn = tail[2] and tonumber(tail[2]) or 0
  end
  group_last_turn = group_last_turn + 1
  return group_last_turn
end

-- Re-activation (§3.1): put group g in the state its waiting jobs and running count say. No
-- waiting job, or paused: in neither gw nor gr; no free slot: left as it is (see below). A free slot and a head not due: gw at the
-- head's due. A free slot and a due head: gr, keeping its turn when it has one (so a group that
-- keeps adding jobs does not lose its place). `running` may be passed when the caller knows it.
-- Returns the head's due time when the group can run (so the caller can wake workers), else nil.
local function group_refresh(K, g, now, running)
  local head = group_heads(K, g, 0, 1)[1]
  if head then
    -- Read even when the bound is unknown: a paused group stays out of turn whatever the caller knows.
    running = running or tonumber(redis.call('HGET', K.gc, g)) or 0
    local gmax = K.gmax or 0
    if running >= GROUP_PAUSED then
      head = nil
    elseif gmax > 0 and running >= gmax then
      -- Full by the caller's bound: left where it is. A full group is in neither gw nor gr
      -- already, unless the bound was raised (queue.configure) and this caller's is older (a
      -- Queue opened before): then it is in turn rightly, and only the claim, which always has
      -- the live bound, takes a full group out.
      return nil
    end
  end
  if not head then
    redis.call('ZREM', K.gw, g)
    redis.call('ZREM', K.gr, g)
    return nil
  end
  local due = group_member_due(g, head)
  if due <= now then
    redis.call('ZREM', K.gw, g)
    if not redis.call('ZSCORE', K.gr, g) then redis.call('ZADD', K.gr, int_text(group_next_turn(K)), g) end
  else
    redis.call('ZREM', K.gr, g)
    redis.call('ZADD', K.gw, ms_text(due), g)
  end
  return due
end

-- Put waiting job `id` of group g in gq, due at `due` (the record's G due must be `due`: the
-- caller writes it), and the group where it belongs. Returns true when workers should hear of it:
-- the job is its group's head and the group can run.
local function group_place(K, id, g, due, now)
  if redis.call('ZADD', K.gq, 0, group_member(g, due, id)) == 1 then group_count(K, g, 1) end
  return group_refresh(K, g, now) == due
end

-- Take waiting job `id` of group g, placed at `due`, out of gq. Returns true when it was there.
local function group_unplace(K, id, g, due, now)
  if redis.call('ZREM', K.gq, group_member(g, due, id)) == 0 then return false end
  group_count(K, g, -1)
  group_refresh(K, g, now)
  return true
end

-- A lease of group g ended (ack, fail, release, reap, cancel): its slot is free again, and the
-- group goes back in turn if it has waiting jobs. `k` slots at once (default 1).
local function group_release(K, g, now, k)
  local running = redis.call('HINCRBY', K.gc, g, k and int_text(-k) or '-1')
  if running <= 0 then
    redis.call('HDEL', K.gc, g)
    running = 0
  end
  return group_refresh(K, g, now, running)
end

-- A lease of group g ended on a path other than the claim (fail, release, cancel): free its slot,
-- and wake sleeping workers when that let the group run (its head is due, or due earlier than
-- they may know).
local function group_release_and_wake(K, g, now)
  local due = group_release(K, g, now)
  if due then redis.call('PUBLISH', K.w, string.format('%.0f', math.max(due, now))) end
end

-- The rate bucket of group g (limit: `max` starts per `per` ms, bursts up to max): take one token
-- at `now`. Returns 0 when taken, else the time the next token comes (nothing written then).
-- The bucket is "<tokens as double><last refill ms uint48>" in gc's field "<group>\0l" (14 bytes
-- per rate-limited group; only a queue with a group limit has them).
local function group_take_token(K, g, now, max, per)
  local field = g .. '\0l'
  local raw = redis.call('HGET', K.gc, field)
  local tokens, last = max, now
  if raw and #raw == 14 then tokens, last = struct.unpack('>dI6', raw) end
  tokens = math.min(max, tokens + (now - last) * max / per)
  if tokens < 1 then return math.ceil(now + (1 - tokens) * per / max) end
  redis.call('HSET', K.gc, field, struct.pack('>dI6', tokens - 1, now))
  return 0
end
