-- Lease checks of layout 2 (docs/ARCHITECTURE.md §3.4): a running job is one member
-- "<claims>.<claimed at>|<id>" (plus "\0<group>") of the lease ZSET K.a, scored by its deadline.
-- The member is the fence: a lease is valid only while its member is in K.a with a score after
-- now. Needs K.a, and K.x for the reason a cancelled job's holder is given.

-- nil when `member` holds a valid lease at `now`, else why not: 'cancelled' (the job was
-- cancelled while it ran), 'expired' (the deadline passed; the reaper has not run yet) or
-- 'not held' (reaped, released, failed, acked, or never claimed with this token).
local function lease_lost(K, member, id, now)
  local deadline = tonumber(redis.call('ZSCORE', K.a, member))
  if deadline and deadline > now then return nil end
  if deadline then return 'expired' end
  if K.x and redis.call('ZSCORE', K.x, id) then return 'cancelled' end
  return 'not held'
end
