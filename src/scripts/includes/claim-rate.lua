-- Claim step 3, the rate window (claim.lua): the queue rate limit, a sliding log of recent starts
-- in lim shared by all workers: no more than max jobs start in any window of `per` ms. The lease
-- step logs each start.
-- Inputs: the context; `want`, the jobs the worker asked for.
-- Outputs: how many jobs the window lets this call take (want when it does not limit); when it
--   limits, the time the window reopens (its oldest start, or now for a first one, leaves it),
--   else -1.
-- Cost: none without a rate limit; else ZREMRANGEBYSCORE lim, ZCARD lim, and ZRANGE lim 0 0 when
--   it limits.
local function claim_rate_window(c, want)
  if c.s.rate_max <= 0 then return want, -1 end
  local K, now = c.K, c.now
  redis.call('ZREMRANGEBYSCORE', K.lim, '-inf', now - c.s.rate_per_ms)
  local allowed = c.s.rate_max - redis.call('ZCARD', K.lim)
  if allowed >= want then return want, -1 end
  local oldest = redis.call('ZRANGE', K.lim, 0, 0, 'WITHSCORES')
  return math.max(allowed, 0), (oldest[2] and tonumber(oldest[2]) or now) + c.s.rate_per_ms + 1
end
