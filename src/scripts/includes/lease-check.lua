-- check_lease(K, id, token, now) -> why, lease: `why` is nil when `token` holds a valid lease on
-- `id`, else the reason it does not ("expired", "not held"). Valid means: the lease record carries
-- this token and the deadline has not passed by the server clock. `lease` is the record as read
-- (nil when there is none), so a caller that needs its start time does not read it again.
-- Needs K.active, K.leases.

local function check_lease(K, id, token, now)
  local lease = redis.call('HGET', K.leases, id)
  if not lease or lease_token(lease) ~= token then return 'not held', lease end
  local deadline = tonumber(redis.call('ZSCORE', K.active, id))
  if not deadline or deadline <= now then return 'expired', lease end
  return nil, lease
end
