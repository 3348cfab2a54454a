-- Claim step 7, the reap (claim.lua): the earliest lease deadline, and when it has passed, up to
-- CLAIM_REAP_MAX expired leases ended here (reap-expired.lua: back to waiting, or dead once their
-- attempts are spent), so a crashed worker's job does not wait for a Reaper tick. Run only when
-- the call leased fewer jobs than asked (a full batch means the worker claims again as soon as a
-- slot frees), and while paused (the jobs then wait for the resume like any other).
-- Inputs: the context; `announce`: publish now on w when jobs went back (not while paused: the
--   workers wait for the resume message).
-- Outputs: how many jobs went back to waiting; the earliest lease deadline when none had expired
--   (-1: no lease), or nil when leases were reaped (the caller reads the head again after it took
--   what the reap returned).
-- Cost: ZRANGE a 0 0; reaping costs reap-expired.lua's commands.

-- Expired leases one claim ends at most; the Reaper duty takes the rest.
local CLAIM_REAP_MAX = 100

-- The earliest lease deadline, -1 when no job is leased.
local function claim_lease_head(c)
  local head = redis.call('ZRANGE', c.K.a, '0', '0', 'WITHSCORES')
  return head[2] and tonumber(head[2]) or -1
end

local function claim_reap(c, announce)
  local head_at = claim_lease_head(c)
  if head_at == -1 or head_at > c.now then return 0, head_at end
  local returned = reap_expired(c.K, c.now, CLAIM_REAP_MAX, c.s.dead_max_count, c.s.dead_max_age_ms)
  if returned > 0 and announce then redis.call('PUBLISH', c.K.w, c.now_text) end
  return returned, nil
end
