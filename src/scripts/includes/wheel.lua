-- Where waiting jobs live, for both layouts. Scripts call place() / unplace() / announce()
-- instead of touching K.schedule, so every path that puts a job back works in either layout.
--
-- zset layout: K.schedule (ZSET id -> due ms) holds every waiting job.
-- wheel layout (K.wheel set, see wheel_keys): a job due at or before now goes to the tail of
--   K.ready (LIST); a later one to the tail of its bucket LIST, the bucket of
--   [start, start + granularity) that holds its due time, indexed in K.wheel (ZSET start -> end)
--   and counted in K.wheel_count. A claim promotes a bucket to K.ready only once its END has
--   passed by the server clock, so no job is ever early and none later than one granularity.
--   Bucket keys cannot be built here (every key must arrive in KEYS, for Redis Cluster): the
--   caller passes the buckets it expects, and a script that needs another one fails with
--   DELAYQ_WRONG_BUCKET <start>[,<start>...] before writing anything; the caller retries with them.
-- Needs prelude.lua (wake_if_head).

-- Read the wheel layout from KEYS[first_key ...] and ARGV[first_arg ...], when the caller passed it:
-- KEYS[first_key] ready, +1 wheel index, +2 wheel count, +3... bucket lists;
-- ARGV[first_arg] granularity ms, then the start of each bucket list, in the same order.
-- Leaves K in the zset layout when KEYS[first_key] is absent. `last_key` (default #KEYS) is the
-- last bucket list, for a script that takes more KEYS after the buckets (add.lua).
local function wheel_keys(K, first_key, first_arg, last_key)
  if KEYS[first_key] == nil then return end
  K.ready, K.wheel, K.wheel_count = KEYS[first_key], KEYS[first_key + 1], KEYS[first_key + 2]
  K.granularity = tonumber(ARGV[first_arg])
  K.buckets = {}
  for i = first_key + 3, last_key or #KEYS do
    K.buckets[tonumber(ARGV[first_arg + 1 + i - (first_key + 3)])] = KEYS[i]
  end
end

local function bucket_of(K, due)
  return due - (due % K.granularity)
end

-- The index member of a bucket: its start as a whole decimal number.
local function bucket_member(start)
  return string.format('%.0f', start)
end

local function count_jobs(K, delta)
  if redis.call('INCRBY', K.wheel_count, delta) <= 0 then redis.call('DEL', K.wheel_count) end
end

-- Error reply naming the buckets `dues` (a list of due times, placed at `now`) would be written
-- to and `removals` (a list of due times of jobs to take out) may sit in but were not passed;
-- nil when nothing is missing (always nil in the zset layout). Call before writing anything.
local function missing_buckets(K, dues, removals, now)
  if not K.wheel then return nil end
  local missing, seen = {}, {}
  local function need(start)
    if not K.buckets[start] and not seen[start] then
      seen[start] = true
      missing[#missing + 1] = bucket_member(start)
    end
  end
  for _, due in ipairs(dues) do
    if due > now then need(bucket_of(K, due)) end
  end
  for _, due in ipairs(removals) do
    local start = bucket_of(K, due)
    if redis.call('ZSCORE', K.wheel, bucket_member(start)) then need(start) end
  end
  if #missing == 0 then return nil end
  return redis.error_reply('DELAYQ_WRONG_BUCKET ' .. table.concat(missing, ','))
end

-- Put waiting job `id`, due at `due`, where claims find it. Returns the time sleeping workers
-- should be told about (see announce), or nil when they need no word: a job pushed to K.ready
-- wakes a worker blocked on it by itself, and a bucket that already existed is already known.
local function place(K, id, due, now)
  if not K.wheel then
    redis.call('ZADD', K.schedule, due, id)
    return due
  end
  if due <= now then
    redis.call('RPUSH', K.ready, id)
    return nil
  end
  local start = bucket_of(K, due)
  redis.call('RPUSH', K.buckets[start], id)
  count_jobs(K, 1)
  if redis.call('ZADD', K.wheel, start + K.granularity, bucket_member(start)) == 1 then
    return start + K.granularity
  end
  return nil
end

-- Tell sleeping workers that work may come at `at` (a value place() returned; nil: nothing to
-- say), when that is earlier than anything else they wait for.
local function announce(K, at)
  if at == nil then return end
  if not K.wheel then
    wake_if_head(K.schedule, K.wake, at)
    return
  end
  local head = redis.call('ZRANGE', K.wheel, 0, 0, 'WITHSCORES')
  if head[2] and tonumber(head[2]) >= at then redis.call('PUBLISH', K.wake, bucket_member(at)) end
end

-- Whether job `id` is waiting (placed, not running, dead or completed).
local function is_waiting(K, id)
  if not K.wheel then return redis.call('ZSCORE', K.schedule, id) ~= false end
  if redis.call('HEXISTS', K.jobs, id) == 0 then return false end
  return not (redis.call('ZSCORE', K.active, id) or redis.call('ZSCORE', K.dead, id)
    or redis.call('ZSCORE', K.completed, id))
end

-- Take waiting job `id` (its bookkeeping `meta`, whose `r` says where it was put) out of where
-- it waits. Returns true when it was there. The caller has checked missing_buckets for meta.r.
-- Cost in the wheel layout: O(length of the bucket or of K.ready) for the LREM.
local function unplace(K, id, meta)
  if not K.wheel then return redis.call('ZREM', K.schedule, id) == 1 end
  if meta and meta.r then
    local start = bucket_of(K, meta.r)
    local key = K.buckets[start]
    if key and redis.call('LREM', key, 1, id) == 1 then
      count_jobs(K, -1)
      if redis.call('LLEN', key) == 0 then redis.call('ZREM', K.wheel, bucket_member(start)) end
      return true
    end
  end
  return redis.call('LREM', K.ready, 1, id) == 1
end

-- Promote the due buckets, earliest first: move each one's jobs to the tail of K.ready sorted by
-- due time (meta `r`; ties in the order they were put) and drop it from the index. A bucket is
-- due once its END has passed by `now`. Stops at the first due bucket the caller did not pass,
-- so due order holds across buckets. Returns how many jobs moved, and the starts of the due
-- buckets left for lack of their key (at most `max_left`), for the caller to pass next time.
local function promote_due(K, now, max_left)
  local moved, left = 0, {}
  local due = redis.call('ZRANGEBYSCORE', K.wheel, '-inf', now, 'LIMIT', 0, 1000)
  for _, member in ipairs(due) do
    local start = tonumber(member)
    local key = K.buckets[start]
    if key == nil or #left > 0 then
      if #left >= max_left then break end
      left[#left + 1] = start
    else
      local ids = redis.call('LRANGE', key, 0, -1)
      if #ids > 0 then
        local order = {}
        for i = 1, #ids, 1000 do
          local batch = { unpack(ids, i, math.min(i + 999, #ids)) }
          local metas = redis.call('HMGET', K.meta, unpack(batch))
          for j, id in ipairs(batch) do
            local r = start
            if metas[j] then r = cjson.decode(metas[j]).r or start end
            order[#order + 1] = { id, r, #order + 1 }
          end
        end
        table.sort(order, function(a, b)
          if a[2] ~= b[2] then return a[2] < b[2] end
          return a[3] < b[3]
        end)
        local chunk = {}
        for i, entry in ipairs(order) do
          chunk[#chunk + 1] = entry[1]
          if #chunk == 1000 or i == #order then
            redis.call('RPUSH', K.ready, unpack(chunk))
            chunk = {}
          end
        end
        redis.call('DEL', key)
        count_jobs(K, -#ids)
        moved = moved + #ids
      end
      redis.call('ZREM', K.wheel, member)
    end
  end
  return moved, left
end
