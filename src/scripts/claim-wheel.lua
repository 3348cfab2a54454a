-- claim (wheel strategy): promote due buckets to the ready list, then lease up to `limit` jobs
-- from its head to one worker. Workers wait for work with BLMOVE ready ready (a pure "something
-- is ready" signal that moves nothing); this script takes and leases in one atomic step, so no
-- job is ever between "taken" and "leased" when a worker dies.
--
-- KEYS[1..12] exactly as claim-zpopmin.lua, then
-- KEYS[13] ready        LIST of due job ids, in due order
-- KEYS[14] wheel        ZSET bucket start -> bucket end (the index of non-empty buckets)
-- KEYS[15] wheel count  STRING jobs waiting in buckets
-- KEYS[16...] bucket    LIST per bucket the caller expects to be due (see the index head it was told)
-- ARGV[1..8] exactly as claim-zpopmin.lua, then
-- ARGV[9] granularity ms, ARGV[10...] the start of each bucket of KEYS[16...], in the same order
-- Returns: the claim-zpopmin.lua reply { now, next_at, n, 5 per job }, then
--          ready_left (jobs still in ready), due_left (1 when due buckets are left for lack of
--          their key: call again at once), m, and the starts of the first m buckets of the index
--          (pass those buckets next time), and last, as in claim-zpopmin.lua, paused. While
--          paused nothing is promoted and the ready list is not taken from. next_at also counts the end of the index head.
-- Guarantee: as claim-zpopmin.lua, and a bucket is promoted only once its end has passed by the
--          server clock, earliest bucket first, its jobs sorted by due time: never early, late by
--          at most the granularity plus the worker's own delay. Entries of the schedule ZSET
--          (written by a producer that does not know the wheel) are moved to ready when due.

--!include prelude.lua
--!include events.lua
--!include wheel.lua
--!include bury.lua
--!include reap-expired.lua
--!include claim-common.lua

-- How many buckets one claim reports for the caller to pass next time.
local HEAD_BUCKETS = 8
-- Stray schedule entries moved per claim; the rest go on the next.
local SWEEP_BATCH = 1000

local K, o = claim_context()
wheel_keys(K, 13, 9)
local due_left = false

local function take(K, now, limit)
  local _, left = promote_due(K, now, HEAD_BUCKETS)
  due_left = #left > 0
  local stray = redis.call('ZRANGEBYSCORE', K.schedule, '-inf', now, 'LIMIT', 0, SWEEP_BATCH)
  if #stray > 0 then
    redis.call('RPUSH', K.ready, unpack(stray))
    redis.call('ZREM', K.schedule, unpack(stray))
  end
  local taken = {}
  while #taken < limit do
    local id = redis.call('LPOP', K.ready)
    if not id then break end
    taken[#taken + 1] = { id, nil }
  end
  return taken
end

local function head(K, now)
  if redis.call('LLEN', K.ready) > 0 then return now end
  local earliest = schedule_head(K)
  local bucket = redis.call('ZRANGE', K.wheel, 0, 0, 'WITHSCORES')
  if bucket[2] and (earliest == -1 or tonumber(bucket[2]) < earliest) then earliest = tonumber(bucket[2]) end
  return earliest
end

local function reply(K, out)
  out[#out + 1] = redis.call('LLEN', K.ready)
  out[#out + 1] = due_left and 1 or 0
  local starts = redis.call('ZRANGE', K.wheel, 0, HEAD_BUCKETS - 1)
  out[#out + 1] = #starts
  for _, start in ipairs(starts) do out[#out + 1] = start end
end

return claim({ take = take, head = head, reply = reply }, K, o)
