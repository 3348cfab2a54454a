-- Flows (docs/ARCHITECTURE.md §4.15): a parent job that runs once, after every child of it
-- completed. The bookkeeping of every flow of a queue lives in two keys of the queue's own hash
-- tag, so a flow in one queue is one slot and works on Redis Cluster unchanged:
--   K.f  HASH  'p\0<parent>' -> children not ended yet; 'k\0<parent>' -> the children's ids,
--              joined by '\0' (no id holds a control character); 'o\0<parent>' -> 'i' when the
--              parent ignores a child that died (onChildFailure 'ignore'); 'c\0<child>' -> its
--              parent's id; 'r\0<child>' -> how the child ended: '1' and the codec's bytes of its
--              result, '0' completed with no result kept, '-' ended otherwise and ignored
--   K.fw ZSET  parent -> its own due time: parents waiting for their children (state
--              'waiting-children'); a parent in fw is in no other waiting set
-- A member of a flow has the F flag (flags B 0x40) in its record, so a script pays for this only
-- for a flow's jobs: the worker's ack of one carries the flag 'w' (claim-acks.lua), and the paths
-- that bury a job (fail.lua, reap-expired.lua) or cancel one (cancel.lua) look at the flag and
-- call FLOW.ended. (bury() cannot call it: this file needs bury.lua, and the function library
-- orders includes by what they use.)
-- An ended flow forgets its bookkeeping when its parent ends (completed, dead or cancelled):
-- every field above of that parent and of its children goes.
-- A child in another queue (one Redis only: two queues are two hash tags, and on Cluster two
-- slots no script can touch together) is named in its parent's list as '<id>\1<queue>' (no id or
-- queue name holds a control character), its result field is 'r\0<id>\1<queue>', and its own
-- queue's K.f holds 'c\0<child>' -> '<parent>\1<parent's queue>'. The scripts that end it have
-- only its own queue's keys, so they leave an outbox entry there, 'x\0<child>' -> how it ended
-- ('1' and its result, '0', 'd' dead, 'c' cancelled), and publish 'F <parent's queue> <child>' on
-- its queue's wake channel; flow-deliver.lua, which has both queues' keys, applies the entry to
-- the parent once (FLOW.count) and deletes it with the child's link.
-- Needs record.lua, place.lua, events.lua and bury.lua (included before this file), K.f, K.fw and
-- K.w.
-- One table, not a local per function: claim.lua loaded alone by EVAL has at most 200 locals.

local FLOW = { BIT = 0x40 }

-- Whether record `rec` belongs to a flow: its flags B has F. Three bytes read, no parse.
function FLOW.member(rec)
  local fa, fb = string.byte(rec, 2, 3)
  return fa ~= nil and fa >= 0x80 and fb ~= nil and bit.band(fb, FLOW.BIT) ~= 0
end

-- The ids of a children list ('\0'-joined), as a table.
function FLOW.split(kids)
  local out = {}
  for kid in string.gmatch(kids, '[^%z]+') do out[#out + 1] = kid end
  return out
end

-- Forget parent `id`'s bookkeeping (it ended): its own fields, its children's links and results,
-- and its place in fw.
function FLOW.forget(K, id, kids)
  local fields = { 'p\0' .. id, 'k\0' .. id, 'o\0' .. id }
  for _, kid in ipairs(FLOW.split(kids)) do
    fields[#fields + 1] = 'c\0' .. kid
    fields[#fields + 1] = 'r\0' .. kid
  end
  call_chunked('HDEL', K.f, fields, 1)
  redis.call('ZREM', K.fw, id)
end

-- Every child of `parent` ended: it leaves fw and waits by its class, due at its own due time
-- or now, whichever is later; sleeping workers hear of it.
function FLOW.release(K, parent, now)
  local due = redis.call('ZSCORE', K.fw, parent)
  if not due then return end
  redis.call('ZREM', K.fw, parent)
  local rec = redis.call('HGET', K.j, parent)
  local h = rec and rec_parse(rec)
  if not h then return end
  due = math.max(tonumber(due), now)
  if place_waiting(K, parent, h, due, now) then redis.call('PUBLISH', K.w, string.format('%.0f', due)) end
end

-- Child `child` of `parent` ended `how` ('dead' or 'cancelled') and its parent does not ignore
-- that: the parent, waiting for its children, is dead with a reason naming the child. Its own
-- burial goes through bury(), so a parent that is itself a child fails its parent in turn.
-- `child_queue`: the child's queue when it is not the parent's, else nil.
function FLOW.fail_parent(K, parent, child, child_queue, how, now, dead_max_count, dead_max_age_ms)
  if redis.call('ZREM', K.fw, parent) == 0 then return end
  local rec = redis.call('HGET', K.j, parent)
  local h = rec and rec_parse(rec)
  if not h then return end
  local where = child_queue and (' in queue ' .. child_queue) or ''
  redis.call('HSET', K.e, parent, cjson.encode({
    name = 'ChildFailedError', message = 'child ' .. child .. where .. ' is ' .. how .. " (onChildFailure 'fail')",
    at = now, attempt = h.attempts, child = child, childQueue = child_queue,
  }))
  emit(K, 'failed', parent, 'attempt', h.attempts, 'retryAt', -1, 'at', now, 'reason', 'child ' .. child .. ' ' .. how)
  bury(K, parent, rec_with_error_flag(rec, h, true), now, h.attempts, dead_max_count, dead_max_age_ms)
  -- Dead in turn: its own parent hears, and its bookkeeping goes.
  FLOW.ended(K, parent, 'dead', nil, now, dead_max_count, dead_max_age_ms)
end

-- Child `child` (`child_queue`: its queue when not the parent's, else nil) of `parent` ended
-- `how` ('completed', with `result` the codec's bytes or nil; 'dead'; 'cancelled'), K being the
-- parent's queue: the parent counts it once (the result field, named `entry` as the parent's list
-- names the child, is written with HSETNX: a second report of the same child changes nothing),
-- and runs when it was the last, or fails when the child did not complete (onChildFailure
-- 'fail'). Returns true when the parent was still waiting for its children.
function FLOW.count(K, parent, entry, child, child_queue, how, result, now, dead_max_count, dead_max_age_ms)
  local state = redis.call('HMGET', K.f, 'p\0' .. parent, 'o\0' .. parent)
  -- Its parent is no longer waiting (it ended, and forgot this child already): nothing to count.
  if not state[1] then return false end
  local mark = '-'
  if how == 'completed' then
    mark = result and ('1' .. result) or '0'
  elseif state[2] ~= 'i' then
    FLOW.fail_parent(K, parent, child, child_queue, how, now, dead_max_count, dead_max_age_ms)
    return true
  end
  if redis.call('HSETNX', K.f, 'r\0' .. entry, mark) == 0 then return true end
  if redis.call('HINCRBY', K.f, 'p\0' .. parent, -1) <= 0 then
    redis.call('HDEL', K.f, 'p\0' .. parent)
    FLOW.release(K, parent, now)
  end
  return true
end

-- Flow member `id` ended `how` ('completed', with `result` the codec's bytes or nil; 'dead';
-- 'cancelled'). As a parent its bookkeeping goes; as a child its parent counts it (FLOW.count),
-- or, when the parent is in another queue, an outbox entry waits for flow-deliver.lua (written
-- with HSETNX: once), and the queue's workers hear of it ('F <parent's queue> <id>').
function FLOW.ended(K, id, how, result, now, dead_max_count, dead_max_age_ms)
  local links = redis.call('HMGET', K.f, 'c\0' .. id, 'k\0' .. id)
  local parent, kids = links[1], links[2]
  if kids then FLOW.forget(K, id, kids) end
  if not parent then return end
  local home, home_queue = string.match(parent, '^([^\1]+)\1(.+)$')
  if home then
    local mark = how == 'completed' and (result and ('1' .. result) or '0') or (how == 'dead' and 'd' or 'c')
    if redis.call('HSETNX', K.f, 'x\0' .. id, mark) == 1 then
      redis.call('PUBLISH', K.w, 'F ' .. home_queue .. ' ' .. id)
    end
    return
  end
  FLOW.count(K, parent, id, id, nil, how, result, now, dead_max_count, dead_max_age_ms)
end

-- A children list's entry: the child's id and, for a child in another queue, that queue's name.
function FLOW.entry(entry)
  local kid, queue = string.match(entry, '^([^\1]+)\1(.+)$')
  if kid then return kid, queue end
  return entry, nil
end

-- Parent `id` is being cancelled: its children still waiting (in a waiting set, or in fw for
-- their own children) are cancelled with it, and theirs in turn; running ones finish, and their
-- ack finds no parent to tell. K.Q maps the name of each other queue a child may be in to its
-- keys (FLOW.queues_missing checked there is one for each). Returns how many were cancelled. The
-- caller cancels `id` itself and then calls FLOW.ended for it.
function FLOW.cancel_children(K, id, now)
  local cancelled = 0
  local stack = { { id, K } }
  while #stack > 0 do
    local top = table.remove(stack)
    local parent, PK = top[1], top[2]
    local kids = redis.call('HGET', PK.f, 'k\0' .. parent)
    for _, entry in ipairs(kids and FLOW.split(kids) or {}) do
      local kid, queue = FLOW.entry(entry)
      local KK = PK
      if queue then KK = K.Q and K.Q[queue] end
      local rec = KK and redis.call('HGET', KK.j, kid)
      local h = rec and rec_parse(rec)
      if h and not h.completed and not h.cancelled then
        local waiting = redis.call('ZREM', KK.fw, kid) == 1 or unplace_waiting(KK, kid, h) ~= nil
        if waiting then
          redis.call('HSET', KK.j, kid, rec_final(rec, h, REC_B_CANCELLED))
          redis.call('ZADD', KK.x, now, kid)
          redis.call('HDEL', KK.e, kid)
          -- Its link to a parent in another queue: the parent's own forget cannot reach it.
          if queue then redis.call('HDEL', KK.f, 'c\0' .. kid) end
          emit(KK, 'cancelled', kid, 'at', now, 'was', 'waiting', 'parent', parent)
          redis.call('HINCRBY', KK.n, 'cancelled', 1)
          cancelled = cancelled + 1
          stack[#stack + 1] = { kid, KK }
        end
      end
    end
    if parent ~= id and kids then FLOW.forget(PK, parent, kids) end
  end
  return cancelled
end

-- The queues, not in K.Q, that children of parent `id` (and theirs) are in; read only, before a
-- cancel writes anything. Children below a queue it cannot read are found by the next call.
function FLOW.queues_missing(K, id)
  local missing, named = {}, {}
  local stack = { { id, K } }
  local walked = 0
  while #stack > 0 and walked < 1000 do
    local top = table.remove(stack)
    walked = walked + 1
    local kids = redis.call('HGET', top[2].f, 'k\0' .. top[1])
    for _, entry in ipairs(kids and FLOW.split(kids) or {}) do
      local kid, queue = FLOW.entry(entry)
      local KK = top[2]
      if queue then KK = K.Q and K.Q[queue] end
      if KK then
        stack[#stack + 1] = { kid, KK }
      elseif not named[queue] then
        named[queue] = true
        missing[#missing + 1] = queue
      end
    end
  end
  return missing
end

-- The result bytes an ack of a flow's job carries (for its parent's childResults), or false:
-- after the header of its final record (ack flag 'f', with U), or the value itself (flag 'u').
function FLOW.ack_result(ack_flags, value)
  if string.find(ack_flags, 'f', 1, true) then
    local h = rec_parse(value)
    return h and h.has_result and string.sub(value, h.body) or false
  end
  if string.find(ack_flags, 'u', 1, true) then return value end
  return false
end

-- Job `id` (record `rec`) was buried: when it is a flow's, its parent hears. For the callers of
-- bury(); a script without the flow keys (K.f) never buries a flow's job.
function FLOW.buried(K, id, rec, now, dead_max_count, dead_max_age_ms)
  if K.f and FLOW.member(rec) then FLOW.ended(K, id, 'dead', nil, now, dead_max_count, dead_max_age_ms) end
end
