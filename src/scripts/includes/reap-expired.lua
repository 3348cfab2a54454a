-- reap_expired(K, now, max, dead_count, dead_age) -> returned, buried (layout 2,
-- docs/ARCHITECTURE.md §4.6). Leases whose deadline has passed end here: the job goes back to
-- waiting by its class, due now (the attempt stays charged: it was counted at the claim), or to
-- the dead set with the error LeaseExpired once its attempts are spent. Used by reap.lua and by
-- the claim's reap-on-claim. Idempotent: a second call finds nothing.
-- Needs K.a, K.j, K.e, K.pg, K.n, K.gc (slots of grouped leases), what place_waiting needs (place.lua), what bury needs
-- (bury.lua), what emit needs (events.lua) and flow.lua (K.f, K.fw: a flow's job that dies ends
-- for its parent). The caller announces returned jobs (wake).

local function reap_expired(K, now, max, dead_count, dead_age)
  local expired = redis.call('ZRANGEBYSCORE', K.a, '-inf', now, 'LIMIT', 0, max)
  if #expired == 0 then return 0, 0 end
  -- The first write removes, so a full Redis (noeviction) still reaps.
  redis.call('ZREM', K.a, unpack(expired))
  local ids = {}
  for i, member in ipairs(expired) do ids[i] = member_id(member) end
  redis.call('HDEL', K.pg, unpack(ids))
  local recs = redis.call('HMGET', K.j, unpack(ids))
  local returned, buried = 0, 0
  for i, member in ipairs(expired) do
    local id, rec = ids[i], recs[i]
    local h, why = nil, 'no record'
    if rec then h, why = rec_parse(rec) end
    local attempt = h and h.attempts or 0
    local token = member_token(member)
    emit(K, 'lease-lost', id, 'attempt', attempt, 'at', now, 'lease', member)
    if h then
      -- Recorded either way, so get() shows why the job ran again; the token tells which lease.
      redis.call('HSET', K.e, id, cjson.encode({
        name = 'LeaseExpired', message = 'lease expired', at = now, attempt = attempt, token = token,
      }))
      rec = rec_with_error_flag(rec, h, true)
      h = rec_parse(rec)
      if h.attempts >= h.max then
        bury(K, id, rec, now, h.attempts, dead_count, dead_age)
        FLOW.buried(K, id, rec, now, dead_count, dead_age)
        buried = buried + 1
      else
        redis.call('HSET', K.j, id, rec)
        place_waiting(K, id, h, now, now)
        returned = returned + 1
      end
    elseif rec then
      -- A record this version cannot read: nothing to run again, so it is kept, dead, with why.
      redis.call('HSET', K.e, id, cjson.encode({
        name = 'BadRecord', message = 'record cannot be read: ' .. tostring(why), at = now,
        attempt = 0, token = token,
      }))
      bury(K, id, rec, now, 0, dead_count, dead_age)
      buried = buried + 1
    end
    -- No record at all (deleted outside delayq): the lease alone was left; the event says so.
  end
  -- The groups' slots (the group is in the member), freed after the jobs went back, so one
  -- re-activation per group sees both.
  local freed, order = {}, {}
  for _, member in ipairs(expired) do
    local g = member_group(member)
    if g then
      if not freed[g] then order[#order + 1] = g end
      freed[g] = (freed[g] or 0) + 1
    end
  end
  for _, g in ipairs(order) do group_release(K, g, now, freed[g]) end
  redis.call('HINCRBY', K.n, 'reaped', #expired)
  return returned, buried
end
