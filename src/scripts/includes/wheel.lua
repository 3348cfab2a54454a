-- The time wheel (strategy 'wheel', docs/ARCHITECTURE.md §8): where the waiting jobs of a
-- wheel queue live. includes/place.lua calls wheel_place / wheel_remove instead of touching the
-- class ZSETs when K.wi is set; claim.lua calls wheel_take; readers call wheel_due / wheel_counts.
--
-- K.wr  LIST ready: ids whose time has come, in due order. Claims take from its head; idle
--       workers wait on it with BLMOVE (or BRPOPLPUSH) ready ready, which moves nothing.
-- K.wi  ZSET bucket start -> bucket end (epoch ms): the index of the non-empty buckets.
-- K.wc  HASH id -> due ms of every job waiting in the wheel, in a bucket or in ready; HLEN is
--       the wheel's count. The lists hold bare ids, and a record has no due time of a waiting
--       job (docs/ARCHITECTURE.md §3.2), so this is where a job's due time is found from its id: to remove
--       it (cancel, reschedule, replace), to show it (get), and to order a bucket's jobs when it
--       is promoted. A job pushed straight into ready is stored as -due, so a remove knows it is
--       not in a bucket (its bucket may still be open, holding later jobs) without scanning one.
-- K.wb  { [start] = key }: the bucket LISTs the caller passed; bucket `start` holds the jobs due
--       in [start, start + K.wg).
-- K.wg  granularity ms.
--
-- A bucket is promoted to ready only once its END has passed by the server clock, so no job is
-- ever early, and none is later than one granularity plus the worker's own delay.
--
-- Bucket keys cannot be built here: every key must arrive in KEYS, for Redis Cluster. The caller
-- passes the buckets it expects; a script first asks wheel_missing() whether a job it will place
-- or remove needs another bucket, and if so returns that error (DELAYQ_WRONG_BUCKET
-- <start>[,<start>...]) before writing anything, and the caller calls again with them
-- (src/operations/wheel.ts withBuckets).

-- Due buckets moved to ready per call at most; the rest on the next call.
local WHEEL_PROMOTE_BUCKETS = 1000
-- Entries of the default-class ZSET moved to ready per call (see wheel_take).
local WHEEL_SWEEP = 1000
-- How many of the index's first buckets a claim reports, for the worker to pass next time.
local WHEEL_HEAD_BUCKETS = 8

-- Read the wheel's keys from KEYS[first_key ...] and ARGV[first_arg ...] when the caller passed
-- them: KEYS[first_key] ready, +1 index, +2 dues, +3 ... bucket lists; ARGV[first_arg]
-- granularity ms, then the start of each bucket list, in the same order. `last_key` (default
-- #KEYS) is the last bucket list, for a script that takes more KEYS after them. Leaves K without
-- K.wi (not a wheel queue) when KEYS[first_key] is absent. Returns nil, or the reason the
-- arguments are malformed (for bad_arg), having set nothing.
local function wheel_keys(K, first_key, first_arg, last_key)
  if KEYS[first_key] == nil then return nil end
  local granularity = tonumber(ARGV[first_arg])
  if not granularity or granularity < 1 or granularity % 1 ~= 0 then
    return 'wheel granularity ' .. tostring(ARGV[first_arg]) .. ' is not a whole number of ms'
  end
  local buckets = {}
  for i = first_key + 3, last_key or #KEYS do
    local arg = ARGV[first_arg + 1 + i - (first_key + 3)]
    local start = tonumber(arg)
    if not start or start % granularity ~= 0 then
      return 'wheel bucket start ' .. tostring(arg) .. ' is not a multiple of the granularity ' .. granularity
    end
    buckets[start] = KEYS[i]
  end
  K.wr, K.wi, K.wc, K.wg, K.wb = KEYS[first_key], KEYS[first_key + 1], KEYS[first_key + 2], granularity, buckets
  return nil
end

local function wheel_bucket_of(K, due)
  return due - (due % K.wg)
end

-- The index member of a bucket: its start as a whole decimal number.
local function wheel_member(start)
  return string.format('%.0f', start)
end

-- Error reply naming the buckets that jobs due at `dues` (placed at `now`) would go to, and the
-- buckets that the waiting jobs `ids` (to be removed) sit in, that the caller did not pass; nil
-- when none is missing, and always nil for a queue that is not a wheel. Call before writing.
local function wheel_missing(K, dues, ids, now)
  if not K.wi then return nil end
  local missing, seen = {}, {}
  local function need(start)
    if not K.wb[start] and not seen[start] then
      seen[start] = true
      missing[#missing + 1] = wheel_member(start)
    end
  end
  for _, due in ipairs(dues) do
    if due > now then need(wheel_bucket_of(K, due)) end
  end
  if ids and #ids > 0 then
    local held = redis.call('HMGET', K.wc, unpack(ids))
    for i = 1, #ids do
      local due = tonumber(held[i])
      if due and due > 0 then
        local start = wheel_bucket_of(K, due)
        if redis.call('ZSCORE', K.wi, wheel_member(start)) then need(start) end
      end
    end
  end
  if #missing == 0 then return nil end
  return redis.error_reply('DELAYQ_WRONG_BUCKET ' .. table.concat(missing, ','))
end

-- The bucket list of `start`; raises when the caller did not pass it (it skipped wheel_missing:
-- a bug, so it must not pass silently).
local function wheel_bucket_key(K, start)
  local key = K.wb[start]
  if not key then error({ err = 'DELAYQ_WRONG_BUCKET ' .. wheel_member(start) }) end
  return key
end

-- Put waiting job `id`, due at `due`, where claims find it. Returns the end of its bucket when
-- that bucket is new (sleeping workers may need to hear of it: wheel_announce), else nil: a job
-- pushed to ready wakes a worker blocked on ready by itself, and a bucket that already existed
-- is already known.
local function wheel_place(K, id, due, now)
  if due <= now then
    redis.call('RPUSH', K.wr, id)
    redis.call('HSET', K.wc, id, -due)
    return nil
  end
  local start = wheel_bucket_of(K, due)
  redis.call('RPUSH', wheel_bucket_key(K, start), id)
  redis.call('HSET', K.wc, id, due)
  if redis.call('ZADD', K.wi, start + K.wg, wheel_member(start)) == 1 then return start + K.wg end
  return nil
end

-- Tell sleeping workers on channel `wake` that a bucket ends at `at` (what wheel_place returned;
-- nil: nothing to say), when no bucket ends earlier. Returns true when it published.
local function wheel_announce(K, wake, at)
  if at == nil then return false end
  local head = redis.call('ZRANGE', K.wi, 0, 0, 'WITHSCORES')
  if head[2] and tonumber(head[2]) >= at then
    redis.call('PUBLISH', wake, wheel_member(at))
    return true
  end
  return false
end

-- The due time of job `id` if it waits in the wheel, and where: 'ready' or 'bucket' (nil when K
-- has no granularity, as in the read scripts); nil when it does not wait there.
local function wheel_due(K, id)
  local due = tonumber(redis.call('HGET', K.wc, id))
  if not due then return nil end
  if due < 0 then return -due, 'ready' end
  if not K.wg then return due, nil end
  if redis.call('ZSCORE', K.wi, wheel_member(wheel_bucket_of(K, due))) then return due, 'bucket' end
  return due, 'ready'
end

-- Take waiting job `id` out of the wheel. Returns its due time, or nil when it was not waiting
-- there (nothing written). `due`, when the caller knows it, is only a hint; K.wc decides. The
-- caller has checked wheel_missing for `id`. Cost: O(length of its bucket, or of ready) (LREM).
local function wheel_remove(K, id, due)
  local at, where = wheel_due(K, id)
  if at == nil then
    -- Not in the wheel, but maybe in K.s: written by a producer that did not pass the wheel's
    -- keys, or by delayq migrate; it waits there until a claim sweeps it (wheel_sweep).
    local score = K.s and redis.call('ZSCORE', K.s, id)
    if score and redis.call('ZREM', K.s, id) == 1 then return tonumber(score) end
    return nil
  end
  local removed = 0
  if where == 'bucket' then
    local start = wheel_bucket_of(K, at)
    local key = wheel_bucket_key(K, start)
    removed = redis.call('LREM', key, 1, id)
    if removed == 1 and redis.call('EXISTS', key) == 0 then redis.call('ZREM', K.wi, wheel_member(start)) end
  end
  if removed == 0 then removed = redis.call('LREM', K.wr, 1, id) end
  -- A due time without a list entry cannot stay: nothing would ever take that job.
  redis.call('HDEL', K.wc, id)
  if removed == 0 then return nil end
  return at
end

-- Whether the last wheel_take left due buckets behind for lack of their keys (see wheel_reply).
local wheel_left_behind = false

-- Promote the due buckets, earliest first: move each one's jobs to the tail of ready, sorted by
-- due time (ties in the order they were put), and drop it from the index. Stops at the first due
-- bucket the caller did not pass, so due order holds across buckets.
local function wheel_promote(K, now)
  local due = redis.call('ZRANGEBYSCORE', K.wi, '-inf', now, 'LIMIT', 0, WHEEL_PROMOTE_BUCKETS)
  for _, member in ipairs(due) do
    local key = K.wb[tonumber(member)]
    if key == nil then
      wheel_left_behind = true
      return
    end
    local ids = redis.call('LRANGE', key, 0, -1)
    if #ids > 0 then
      local order = {}
      for first = 1, #ids, UNPACK_CHUNK do
        local last = math.min(#ids, first + UNPACK_CHUNK - 1)
        local dues = redis.call('HMGET', K.wc, unpack(ids, first, last))
        for k = 1, last - first + 1 do
          local i = first + k - 1
          order[i] = { ids[i], math.abs(tonumber(dues[k]) or 0), i }
        end
      end
      table.sort(order, function(a, b)
        if a[2] ~= b[2] then return a[2] < b[2] end
        return a[3] < b[3]
      end)
      local sorted = {}
      for i, entry in ipairs(order) do sorted[i] = entry[1] end
      call_chunked('RPUSH', K.wr, sorted, 1)
      redis.call('DEL', key)
    end
    redis.call('ZREM', K.wi, member)
  end
  if #due == WHEEL_PROMOTE_BUCKETS then wheel_left_behind = true end
end

-- Jobs in the default-class ZSET K.s (when given) are a producer's that did not pass the wheel's
-- keys: move the due ones to ready, so they are not stranded where no wheel worker looks.
local function wheel_sweep(K, now)
  if not K.s then return end
  local stray = redis.call('ZRANGEBYSCORE', K.s, '-inf', now, 'LIMIT', 0, WHEEL_SWEEP, 'WITHSCORES')
  if #stray == 0 then return end
  local ids, held = {}, {}
  for i = 1, #stray, 2 do
    ids[#ids + 1] = stray[i]
    held[#held + 1] = stray[i]
    held[#held + 1] = '-' .. stray[i + 1]
  end
  call_chunked('RPUSH', K.wr, ids, 1)
  call_chunked('ZREM', K.s, ids, 1)
  call_chunked('HSET', K.wc, held, 2)
end

-- When a claim should look again, from the wheel alone: now while ready holds jobs or due buckets
-- were left behind, else the end of the first bucket or K.s's head, whichever is first; -1 when
-- nothing waits.
local function wheel_next(K, now)
  if wheel_left_behind or redis.call('LLEN', K.wr) > 0 then return now end
  local next_at = -1
  local bucket = redis.call('ZRANGE', K.wi, 0, 0, 'WITHSCORES')
  if bucket[2] then next_at = tonumber(bucket[2]) end
  if K.s then
    local head = redis.call('ZRANGE', K.s, 0, 0, 'WITHSCORES')
    if head[2] and (next_at == -1 or tonumber(head[2]) < next_at) then next_at = tonumber(head[2]) end
  end
  return next_at
end

-- Take up to `limit` due jobs: promote the due buckets, sweep strays from K.s, then take ready's
-- head. Returns the ids, their due times (same order), and when to look again (wheel_next).
local function wheel_take(K, limit, now)
  wheel_left_behind = false
  wheel_promote(K, now)
  wheel_sweep(K, now)
  local ids, dues = {}, {}
  if limit > 0 then
    ids = redis.call('LRANGE', K.wr, 0, limit - 1)
    if #ids > 0 then
      redis.call('LTRIM', K.wr, #ids, -1)
      local held = redis.call('HMGET', K.wc, unpack(ids))
      for i = 1, #ids do
        -- A ready id without a due time can only come from outside delayq: due now, not lost.
        dues[i] = math.abs(tonumber(held[i]) or now)
      end
      redis.call('HDEL', K.wc, unpack(ids))
    end
  end
  return ids, dues, wheel_next(K, now)
end

-- Append what a wheel worker needs besides the jobs to a claim's reply `out`: jobs left in ready,
-- 1 when due buckets were left behind (claim again at once), m, and the starts of the index's
-- first m buckets (pass those next time).
local function wheel_reply(K, out)
  out[#out + 1] = redis.call('LLEN', K.wr)
  out[#out + 1] = wheel_left_behind and 1 or 0
  local starts = redis.call('ZRANGE', K.wi, 0, WHEEL_HEAD_BUCKETS - 1)
  out[#out + 1] = #starts
  for _, start in ipairs(starts) do out[#out + 1] = start end
end

-- Waiting jobs in the wheel, how many of them are due (in ready), and when the next is due (the
-- due time of ready's head, kept in wc, while ready holds jobs: ready is in due order; else the
-- first bucket's end; -1 when none waits).
local function wheel_counts(K, now)
  local ready = redis.call('LLEN', K.wr)
  local waiting = redis.call('HLEN', K.wc)
  local next_due = -1
  if ready > 0 then
    local head = redis.call('LRANGE', K.wr, 0, 0)[1]
    local due = head and tonumber(redis.call('HGET', K.wc, head))
    next_due = due and math.abs(due) or now
  else
    local bucket = redis.call('ZRANGE', K.wi, 0, 0, 'WITHSCORES')
    if bucket[2] then next_due = tonumber(bucket[2]) end
  end
  return waiting, ready, next_due
end
