-- Claim step 8, the next wake (claim.lua): when this worker should claim again, and whether the
-- other workers must hear of due jobs now.
-- Inputs: the context; `next_at`, the earliest time the steps found (the takes' next heads, the
--   lease head, now when due jobs were left); the rate window's reopening (-1: not limited) and
--   whether the window held the take back; `woke`, the earliest head due of a group an ack let run
--   again (nil: none).
-- Output: next_at for the reply (-1: nothing known). Publishes now on w when an ack let a group
--   run that this call leaves waiting, so an idle worker takes it.
-- Cost: at most one PUBLISH.

-- When to claim again after a take: held back by the rate limit with due jobs waiting, when the
-- window lets the next job start.
local function claim_after_window(c, next_at, reopens, held_back)
  if reopens > 0 and (held_back or next_at == c.now) then return reopens end
  return next_at
end

local function claim_wake(c, next_at, woke)
  if woke and next_at ~= -1 and next_at <= c.now then redis.call('PUBLISH', c.K.w, c.now_text) end
  return next_at
end

-- An ack-only call: workers hear of a group its acks let run, at the group head's due.
local function claim_wake_acked(c, woke)
  if woke then redis.call('PUBLISH', c.K.w, ms_text(math.max(woke, c.now))) end
end
