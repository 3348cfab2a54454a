-- cancel: cancel a job that is waiting or running (issue 15), and record it cancelled.
--
-- KEYS[1] schedule, KEYS[2] jobs, KEYS[3] meta, KEYS[4] errors, KEYS[5] events,
-- KEYS[6] active, KEYS[7] dead, KEYS[8] completed, KEYS[9] leases, KEYS[10] progress,
-- KEYS[11] cancelled (ZSET id -> cancelled at ms, `x` as in layout 2), KEYS[12] wake channel
-- KEYS[13...] wheel layout only: ready, wheel, wheel count, then bucket lists (wheel.lua)
-- ARGV[1] id, ARGV[2] events cap, ARGV[3] keep cancelled: max count, ARGV[4] keep cancelled:
-- max age ms
-- ARGV[5...] wheel layout only: granularity ms, then the start of each bucket list passed in KEYS
-- Returns: 'waiting' or 'running' when cancelled; 0 when there is nothing to cancel (unknown,
--          dead, completed, already cancelled); wheel layout: error 'DELAYQ_WRONG_BUCKET <start>'
--          (nothing written) when the job's bucket (by its meta `r`) is in the wheel but was not
--          passed.
-- ACL: a waiting job's cancel only reads active, leases and progress (a waiting job has no
-- progress: it is deleted when an attempt ends), so a producer without write access to them can
-- still cancel waiting jobs (docs/SECURITY.md).
-- Cost: zset layout O(log n); wheel layout O(length of the job's bucket, or of ready) (LREM).
-- Guarantee (DESIGN invariant 8, cancelled is final): a running job's lease and active entry go
-- in this one step, so its holder's late ack or fail finds no lease (refused), the reaper, which
-- works from `active`, never sees it again, and no claim can take it. The holder learns it from
-- the wake message `C <token>|<id>` (its own lease member), not by polling.

--!include prelude.lua
--!include events.lua
--!include wheel.lua

local K = {
  schedule = KEYS[1], jobs = KEYS[2], meta = KEYS[3], errors = KEYS[4], events = KEYS[5],
  active = KEYS[6], dead = KEYS[7], completed = KEYS[8], leases = KEYS[9], progress = KEYS[10],
  cancelled = KEYS[11], wake = KEYS[12], events_cap = tonumber(ARGV[2]),
}
wheel_keys(K, 13, 5)
local id = ARGV[1]
local keep_count, keep_age_ms = tonumber(ARGV[3]), tonumber(ARGV[4])
local now = now_ms()
local how
local lease = redis.call('HGET', K.leases, id)
if lease and redis.call('ZSCORE', K.active, id) then
  -- Running: take the lease away first (a removal, so the script may run over maxmemory).
  redis.call('ZREM', K.active, id)
  redis.call('HDEL', K.leases, id)
  redis.call('HDEL', K.progress, id)
  how = 'running'
else
  if not is_waiting(K, id) then return 0 end
  local meta = read_meta(K.meta, id)
  local missing = missing_buckets(K, {}, { meta and meta.r or 0 }, now)
  if missing then return missing end
  if not unplace(K, id, meta) then return 0 end
  how = 'waiting'
end
redis.call('HDEL', K.jobs, id)
redis.call('HDEL', K.meta, id)
redis.call('HDEL', K.errors, id)
-- The record get() answers 'cancelled' from, bounded by count and age like the dead set.
redis.call('ZADD', K.cancelled, now, id)
redis.call('ZREMRANGEBYSCORE', K.cancelled, '-inf', '(' .. (now - keep_age_ms))
local excess = redis.call('ZCARD', K.cancelled) - keep_count
if excess > 0 then redis.call('ZREMRANGEBYRANK', K.cancelled, 0, excess - 1) end
if how == 'running' then
  redis.call('PUBLISH', K.wake, 'C ' .. lease_token(lease) .. '|' .. id)
end
emit(K, 'cancelled', id, 'at', now, 'was', how)
return how
