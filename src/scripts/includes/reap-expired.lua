-- reap_expired(K, now, limit, dead_max_count, dead_max_age_ms) -> returned, buried
-- Jobs whose lease deadline has passed go back to waiting (place()), due now, or to
-- the dead set with reason "lease expired" once their attempts are spent. The
-- attempt was counted when the job was claimed. Idempotent: a second call finds
-- nothing. Needs K.active, K.leases, K.progress, what place needs (wheel.lua) and what bury needs.

local function reap_expired(K, now, limit, dead_max_count, dead_max_age_ms)
  local expired = redis.call('ZRANGEBYSCORE', K.active, '-inf', now, 'LIMIT', 0, limit)
  local returned, buried = 0, 0
  for _, id in ipairs(expired) do
    local lease = redis.call('HGET', K.leases, id)
    redis.call('ZREM', K.active, id)
    redis.call('HDEL', K.leases, id)
    -- The expired attempt's progress goes with it: the next attempt reports its own.
    redis.call('HDEL', K.progress, id)
    local meta = read_meta(K.meta, id)
    if meta == nil then
      -- No record of the job: nothing to return; the active entry alone was stale.
    else
      -- Recorded either way, so get() shows why the job ran again.
      redis.call('HSET', K.errors, id, cjson.encode({
        message = 'lease expired', name = 'LeaseExpired', at = now, attempt = meta.a,
        lease = lease or false,
      }))
    end
    emit(K, 'lease-lost', id, 'attempt', meta and meta.a or 0, 'at', now, 'lease', lease or '')
    if meta == nil then
      -- Nothing more to do.
    elseif meta.a >= meta.m then
      bury(K, id, now, dead_max_count, dead_max_age_ms)
      buried = buried + 1
    else
      meta.r = now
      write_meta(K.meta, id, meta)
      place(K, id, now, now)
      returned = returned + 1
    end
  end
  return returned, buried
end
