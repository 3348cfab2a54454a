-- claim(take_due): the part of claiming shared by every strategy. take_due(K, now,
-- limit) removes up to `limit` due jobs from the schedule and returns { {id, due}, ... }.
-- KEYS and ARGV: see claim-zpopmin.lua.

-- How many expired leases one claim returns at most; the reaper takes the rest.
local REAP_ON_CLAIM = 100

local function claim(take_due)
  local K = {
    schedule = KEYS[1], jobs = KEYS[2], meta = KEYS[3], active = KEYS[4],
    leases = KEYS[5], token = KEYS[6], dead = KEYS[7], errors = KEYS[8],
    limiter = KEYS[9], events = KEYS[10], events_cap = tonumber(ARGV[8]),
  }
  local limit, lease_ms, worker = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
  local dead_max_count, dead_max_age_ms = tonumber(ARGV[4]), tonumber(ARGV[5])
  local rate_max, rate_per_ms = tonumber(ARGV[6]), tonumber(ARGV[7])
  local now = now_ms()

  reap_expired(K, now, REAP_ON_CLAIM, dead_max_count, dead_max_age_ms)

  -- Rate limit, shared by every worker of the queue: a sliding log of recent starts.
  local window_reopens = -1
  if rate_max > 0 then
    redis.call('ZREMRANGEBYSCORE', K.limiter, '-inf', now - rate_per_ms)
    local allowed = rate_max - redis.call('ZCARD', K.limiter)
    if allowed < limit then
      limit = math.max(allowed, 0)
      local oldest = redis.call('ZRANGE', K.limiter, 0, 0, 'WITHSCORES')
      if oldest[2] then window_reopens = tonumber(oldest[2]) + rate_per_ms + 1 end
    end
  end

  local out = { now, -1, 0 }
  local claimed = 0
  if limit > 0 then
    local deadline = now + lease_ms
    for _, job in ipairs(take_due(K, now, limit)) do
      local id, due = job[1], job[2]
      local envelope = redis.call('HGET', K.jobs, id)
      local meta = read_meta(K.meta, id)
      if envelope and meta then
        meta.a = meta.a + 1
        local encoded_meta = cjson.encode(meta)
        redis.call('HSET', K.meta, id, encoded_meta)
        local token = redis.call('INCR', K.token)
        redis.call('ZADD', K.active, deadline, id)
        redis.call('HSET', K.leases, id, token .. '|' .. now .. '|' .. worker)
        out[#out + 1] = id
        out[#out + 1] = token
        out[#out + 1] = envelope
        out[#out + 1] = encoded_meta
        out[#out + 1] = due
        claimed = claimed + 1
        if rate_max > 0 then redis.call('ZADD', K.limiter, now, token) end
        emit(K, 'claimed', id, 'attempt', meta.a, 'runAt', due, 'at', now, 'worker', worker)
      else
        -- A schedule entry without its job can only come from outside delayq (a
        -- manual HDEL). It is recorded as dead rather than dropped, so it is seen.
        redis.call('HSET', K.errors, id, cjson.encode({
          message = 'job data missing from Redis (removed outside delayq)', name = 'MissingJob', at = now,
        }))
        bury(K, id, now, dead_max_count, dead_max_age_ms)
      end
    end
  end
  out[3] = claimed

  local next_at = -1
  local head = redis.call('ZRANGE', K.schedule, 0, 0, 'WITHSCORES')
  if head[2] then next_at = tonumber(head[2]) end
  local lease_head = redis.call('ZRANGE', K.active, 0, 0, 'WITHSCORES')
  if lease_head[2] and (next_at == -1 or tonumber(lease_head[2]) < next_at) then
    next_at = tonumber(lease_head[2])
  end
  -- Held back by the rate limit: look again when the window lets the next job start.
  if window_reopens > 0 and head[2] and tonumber(head[2]) <= now then next_at = window_reopens end
  out[2] = next_at
  return out
end
