-- Where a waiting job lives in layout 2 (docs/ARCHITECTURE.md §3.1): exactly one of K.s
-- (default class, member id, score due), K.p (prioritized, not due: member "<prio>:<id>", score
-- due) or K.r (prioritized and due: score (prio + 1024) * 2^42 + due), or for the wheel strategy
-- (K.wi set by wheel_keys, wheel.lua) its bucket or ready list. The record's header (h from
-- rec_parse) says which, so removing a waiting job never searches. A grouped job waits in K.gq,
-- under the due time its record's G block holds (groups.lua, included here).
-- Needs record.lua; a script using the wheel strategy includes wheel.lua before this file.

--!include groups.lua

-- 2^42 ms reaches the year 2109; priorities -1024..1023 above it keep every r score an exact
-- double ((2047 + 1) * 2^42 = 2^53).
local PLACE_TWO42 = 4398046511104
local PLACE_PRIO_BASE = 1024

-- The member of a prioritized job in p and r: "<prio>:<id>" (src/members/priority.ts).
local function prio_member(prio, id)
  return string.format('%d', prio) .. ':' .. id
end

-- The job id of a member of p or r (a priority has no ':'; an id may).
local function prio_member_id(member)
  return string.sub(member, string.find(member, ':', 1, true) + 1)
end

-- The score of a due prioritized job in r.
local function prio_ready_score(prio, due)
  return (prio + PLACE_PRIO_BASE) * PLACE_TWO42 + due
end

-- Put waiting job `id` (header h) where a claim finds it, due at `due`. Returns true when it
-- became the earliest job of where it went (or is due already), so the caller publishes the wake.
local function place_waiting(K, id, h, due, now)
  if h.group then
    if h.group_due ~= due then
      -- The G block names the job's member in gq: it must hold the due it waits under. The caller
      -- wrote the record already; it is patched here, on the paths that put a job back.
      local rec = redis.call('HGET', K.j, id)
      local current = rec and rec_parse(rec)
      if current and current.group then
        redis.call('HSET', K.j, id, rec_with_group_due(rec, current, due))
      end
    end
    return group_place(K, id, h.group, due, now)
  end
  if K.wi then return wheel_place(K, id, due, now) end
  if h.prio == 0 then
    local head = redis.call('ZRANGE', K.s, 0, 0, 'WITHSCORES')
    redis.call('ZADD', K.s, due, id)
    return head[2] == nil or due < tonumber(head[2])
  end
  local member = prio_member(h.prio, id)
  if due <= now then
    -- Already due: straight to r, where claims take it in priority order.
    redis.call('ZADD', K.r, prio_ready_score(h.prio, due), member)
    return true
  end
  local head = redis.call('ZRANGE', K.p, 0, 0, 'WITHSCORES')
  redis.call('ZADD', K.p, due, member)
  return head[2] == nil or due < tonumber(head[2])
end

-- Take waiting job `id` (header h) out of where it waits. Returns its due time, or nil when it
-- was not waiting there. `due` is needed only by the wheel strategy (the bucket to look in).
local function unplace_waiting(K, id, h, due)
  if h.group then
    if not group_unplace(K, id, h.group, h.group_due, now_ms()) then return nil end
    return h.group_due
  end
  if K.wi then return wheel_remove(K, id, due) end
  if h.prio == 0 then
    local score = redis.call('ZSCORE', K.s, id)
    if not score then return nil end
    redis.call('ZREM', K.s, id)
    return tonumber(score)
  end
  local member = prio_member(h.prio, id)
  local score = redis.call('ZSCORE', K.p, member)
  if score then
    redis.call('ZREM', K.p, member)
    return tonumber(score)
  end
  score = redis.call('ZSCORE', K.r, member)
  if not score then return nil end
  redis.call('ZREM', K.r, member)
  return tonumber(score) % PLACE_TWO42
end
