-- The claim shared by every strategy, in two steps a strategy composes:
--   take:  strategy.take(K, now, limit) removes up to `limit` due jobs from where they wait and
--          returns { {id, due or nil}, ... } (nil: read the due time from the job's meta `r`);
--   lease: lease_taken() gives each taken job a fresh fencing token and deadline, counts the
--          attempt, records the start for the rate limit, and buries a job whose data is gone.
-- claim(strategy) runs reap-on-claim and the rate limit, then take, then lease, and works out
-- when the worker must look again; strategy.head(K, now) is the earliest time a waiting job can
-- be taken (-1: none waits), strategy.reply(K, out), when given, appends to the reply.
-- KEYS and ARGV: see claim-zpopmin.lua (a strategy may append its own after them).
-- Needs prelude.lua, events.lua, bury.lua, reap-expired.lua.

-- How many expired leases one claim returns at most; the reaper takes the rest.
local REAP_ON_CLAIM = 100

-- The keys and options of a claim, from KEYS[1..12] and ARGV[1..8].
local function claim_context()
  local K = {
    schedule = KEYS[1], jobs = KEYS[2], meta = KEYS[3], active = KEYS[4],
    leases = KEYS[5], token = KEYS[6], dead = KEYS[7], errors = KEYS[8],
    limiter = KEYS[9], events = KEYS[10], paused = KEYS[11], progress = KEYS[12],
    events_cap = tonumber(ARGV[8]),
  }
  local o = {
    limit = tonumber(ARGV[1]), lease_ms = tonumber(ARGV[2]), worker = ARGV[3],
    dead_max_count = tonumber(ARGV[4]), dead_max_age_ms = tonumber(ARGV[5]),
    rate_max = tonumber(ARGV[6]), rate_per_ms = tonumber(ARGV[7]),
  }
  return K, o
end

-- Lease step: lease every job of `taken` to o.worker, appending 5 fields per leased job to `out`.
-- Returns how many were leased. Reads and writes go one command per key for the whole batch,
-- not per job: a claim of 50 costs a handful of commands, not hundreds.
local function lease_taken(K, o, now, taken, out)
  if #taken == 0 then return 0 end
  local ids = {}
  for i, job in ipairs(taken) do ids[i] = job[1] end
  local envelopes, metas = {}, {}
  for first = 1, #ids, UNPACK_CHUNK do
    local last = math.min(#ids, first + UNPACK_CHUNK - 1)
    local e = redis.call('HMGET', K.jobs, unpack(ids, first, last))
    local m = redis.call('HMGET', K.meta, unpack(ids, first, last))
    for k = 1, last - first + 1 do
      envelopes[first + k - 1] = e[k]
      metas[first + k - 1] = m[k]
    end
  end
  local deadline = now + o.lease_ms
  -- The counter orders tokens; the claim time makes each unique even if a failover rolled the
  -- counter back (a claim the replica never saw), so an old holder can never match.
  local last_token = redis.call('INCRBY', K.token, #taken)
  local next_token = last_token - #taken
  local meta_args, active_args, lease_args, limiter_args = {}, {}, {}, {}
  local claimed = 0
  for i, job in ipairs(taken) do
    local id = ids[i]
    local envelope = envelopes[i]
    local meta = metas[i] and cjson.decode(metas[i])
    if envelope and meta then
      local due = job[2] or meta.r or now
      meta.a = meta.a + 1
      local encoded_meta = cjson.encode(meta)
      next_token = next_token + 1
      local token = next_token .. '.' .. now
      meta_args[#meta_args + 1] = id
      meta_args[#meta_args + 1] = encoded_meta
      active_args[#active_args + 1] = deadline
      active_args[#active_args + 1] = id
      lease_args[#lease_args + 1] = id
      lease_args[#lease_args + 1] = token .. '|' .. now .. '|' .. o.worker
      limiter_args[#limiter_args + 1] = now
      limiter_args[#limiter_args + 1] = token
      out[#out + 1] = id
      out[#out + 1] = token
      out[#out + 1] = envelope
      out[#out + 1] = encoded_meta
      out[#out + 1] = due
      claimed = claimed + 1
      emit(K, 'claimed', id, 'attempt', meta.a, 'runAt', due, 'at', now, 'worker', o.worker)
    else
      -- A waiting entry without its job can only come from outside delayq (a manual HDEL).
      -- It is recorded as dead rather than dropped, so it is seen.
      redis.call('HSET', K.errors, id, cjson.encode({
        message = 'job data missing from Redis (removed outside delayq)', name = 'MissingJob', at = now,
      }))
      bury(K, id, now, o.dead_max_count, o.dead_max_age_ms)
    end
  end
  if claimed > 0 then
    call_chunked('HSET', K.meta, meta_args, 2)
    call_chunked('ZADD', K.active, active_args, 2)
    call_chunked('HSET', K.leases, lease_args, 2)
    if o.rate_max > 0 then call_chunked('ZADD', K.limiter, limiter_args, 2) end
  end
  return claimed
end

local function claim(strategy, K, o)
  local now = now_ms()
  local limit = o.limit

  -- Reap first, but only when the earliest lease has expired: one read when none has.
  local lease_head = redis.call('ZRANGE', K.active, 0, 0, 'WITHSCORES')
  if lease_head[2] and tonumber(lease_head[2]) <= now then
    reap_expired(K, now, REAP_ON_CLAIM, o.dead_max_count, o.dead_max_age_ms)
    lease_head = redis.call('ZRANGE', K.active, 0, 0, 'WITHSCORES')
  end

  -- The pause gate (issue 15): a paused queue's claim takes nothing, whatever the worker believes,
  -- so no job starts once pause.lua has run. next_at is -1: the worker sleeps until the resume's
  -- wake message (or its safety timer), not until a due time it may not act on. Reaped leases
  -- above still go back, so a dead worker's job waits for the resume like any other.
  if redis.call('EXISTS', K.paused) == 1 then
    local out = { now, -1, 0 }
    if strategy.reply then strategy.reply(K, out) end
    out[#out + 1] = 1
    return out
  end

  -- Rate limit, shared by every worker of the queue: a sliding log of recent starts.
  local window_reopens = -1
  if o.rate_max > 0 then
    redis.call('ZREMRANGEBYSCORE', K.limiter, '-inf', now - o.rate_per_ms)
    local allowed = o.rate_max - redis.call('ZCARD', K.limiter)
    if allowed < limit then
      limit = math.max(allowed, 0)
      local oldest = redis.call('ZRANGE', K.limiter, 0, 0, 'WITHSCORES')
      if oldest[2] then window_reopens = tonumber(oldest[2]) + o.rate_per_ms + 1 end
    end
  end

  local out = { now, -1, 0 }
  if limit > 0 then out[3] = lease_taken(K, o, now, strategy.take(K, now, limit), out) end

  local head = strategy.head(K, now)
  local next_at = head
  -- The earliest lease deadline: the old head, or this claim's deadline if it is earlier.
  local earliest_lease = lease_head[2] and tonumber(lease_head[2]) or nil
  if out[3] > 0 and (earliest_lease == nil or now + o.lease_ms < earliest_lease) then
    earliest_lease = now + o.lease_ms
  end
  if earliest_lease and (next_at == -1 or earliest_lease < next_at) then next_at = earliest_lease end
  -- Held back by the rate limit: look again when the window lets the next job start.
  if window_reopens > 0 and head ~= -1 and head <= now then next_at = window_reopens end
  out[2] = next_at
  if strategy.reply then strategy.reply(K, out) end
  out[#out + 1] = 0
  return out
end

-- The head of the schedule ZSET: the earliest due time waiting there, or -1.
local function schedule_head(K)
  local head = redis.call('ZRANGE', K.schedule, 0, 0, 'WITHSCORES')
  if head[2] then return tonumber(head[2]) end
  return -1
end
