-- claim (zpopmin strategy): lease up to `limit` due jobs to one worker.
--
-- KEYS[1] schedule  ZSET id -> due ms
-- KEYS[2] jobs      HASH id -> envelope
-- KEYS[3] meta      HASH id -> bookkeeping
-- KEYS[4] active    ZSET id -> lease deadline ms
-- KEYS[5] leases    HASH id -> "token|startMs|workerId"
-- KEYS[6] token     STRING fencing token counter
-- KEYS[7] dead      ZSET id -> died at ms
-- KEYS[8] errors    HASH id -> last error (JSON)
-- KEYS[9] limiter   ZSET token -> start ms of recent starts (rate limit)
-- KEYS[10] events   STREAM of job events
-- KEYS[11] paused   STRING present while the queue is paused (pause.lua)
-- KEYS[12] progress HASH id -> running job's progress (reap-on-claim deletes an expired attempt's)
-- ARGV[1] limit, ARGV[2] lease ms, ARGV[3] worker id, ARGV[4] dead max count, ARGV[5] dead max age ms,
-- ARGV[6] rate limit: max starts (0 = no limit), ARGV[7] rate limit: window ms, ARGV[8] events cap
-- Returns: { now, next_at, n, then 5 per job: id, token, envelope, meta (JSON), run_at, paused }
--          next_at is the earliest of the schedule's head and the active set's earliest
--          deadline (when this or another worker must act next), or -1 when both are empty.
--          paused (the last element) is 1 when the queue is paused: then n is 0 and next_at -1.
-- Guarantee: a job is claimed only when due by the server clock and the queue is not paused; each claim gets a fresh
--          token and deadline; expired leases are returned first, so a claiming worker
--          never leaves a crashed worker's job waiting for a reaper tick; with a rate limit, no
--          more than max jobs start in any window of `per` ms, across all workers of the queue.

--!include prelude.lua
--!include events.lua
--!include wheel.lua
--!include bury.lua
--!include reap-expired.lua
--!include claim-common.lua

-- ZPOPMIN takes from the head, so count the due jobs first: popping a job that is
-- not yet due and putting it back would reorder equal scores and cost a write.
-- The schedule's head as take_due found it when it took nothing, so the reply need not read it again.
local untouched_head = nil

local function take_due(K, now, limit)
  -- Nothing due (the common case for an idle worker): one read, no count.
  local head = redis.call('ZRANGE', K.schedule, 0, 0, 'WITHSCORES')
  if not head[2] or tonumber(head[2]) > now then
    untouched_head = head[2] and tonumber(head[2]) or -1
    return {}
  end
  local due = redis.call('ZCOUNT', K.schedule, '-inf', now)
  if due > limit then due = limit end
  if due == 0 then return {} end
  local popped = redis.call('ZPOPMIN', K.schedule, due)
  local taken = {}
  for i = 1, #popped, 2 do
    taken[#taken + 1] = { popped[i], tonumber(popped[i + 1]) }
  end
  return taken
end

local function head(K)
  if untouched_head ~= nil then return untouched_head end
  return schedule_head(K)
end

local K, o = claim_context()
return claim({ take = take_due, head = head }, K, o)
