-- Claim step 2, the pause gate (claim.lua): one EXISTS answers for pause, priorities and groups
-- together (an empty ZSET does not exist), so a queue that uses none of them pays one command per
-- call. A paused queue (partition) leases nothing, whatever the worker believes: the worker waits
-- for the resume message (or its safety timer), not for a due time it may not act on.
-- Inputs: the context.
-- Outputs: `special`, how many of z p r gw gr exist (0: the default class alone, the fast path);
--   whether the queue is paused.
-- Cost: EXISTS, and EXISTS z when any of them exists.
local function claim_gate(c)
  local K = c.K
  local special = redis.call('EXISTS', K.z, K.p, K.r, K.gw, K.gr)
  return special, special > 0 and redis.call('EXISTS', K.z) == 1
end
