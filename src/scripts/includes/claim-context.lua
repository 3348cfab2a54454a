-- The claim's context (claim.lua): what one call was asked, made once per call and handed to every
-- step, which reads it and writes nothing in it (each step returns what it found).
-- Inputs: KEYS and ARGV as claim.lua's header lists them.
-- Output: the context c, or nil and the reason KEYS or ARGV cannot be used (claim.lua refuses the
--   call with it before anything is written). c.K: the keys by name (and what the shared includes
--   read there: events_cap, gmax, the wheel's); the settings as numbers; the acks' place in ARGV;
--   the clock (now, now_us, now_text), cutoff (the latest due a take may lease) and its text.
-- Cost: TIME, a few table lookups (settings are read through prelude.lua's memo), and three bytes
--   per ack with a final record.

-- ARGV index of the first ack's member, and the values per ack (member, known deadline, flags,
-- final record or result).
local CLAIM_ACK_FIRST = 14
local CLAIM_ACK_WIDTH = 4
-- KEYS index of the wheel's first key (wr), after the 20 of every strategy.
local CLAIM_WHEEL_FIRST_KEY = 21

local function claim_context()
  -- The one place the KEYS order is written in Lua: test/hotpath/claim-keys.test.ts checks it
  -- against the header and against claimKeys() (src/operations/claim.ts).
  local K = {
    s = KEYS[1], p = KEYS[2], r = KEYS[3], gq = KEYS[4], gw = KEYS[5], gr = KEYS[6], gc = KEYS[7],
    j = KEYS[8], a = KEYS[9], c = KEYS[10], x = KEYS[11], e = KEYS[12], d = KEYS[13], z = KEYS[14],
    lim = KEYS[15], ev = KEYS[16], w = KEYS[17], n = KEYS[18], pg = KEYS[19], gn = KEYS[20],
    events = KEYS[16], events_cap = 0, gmax = 1,
  }
  -- Settings as numbers through the memo (prelude.lua): the same texts come in every call.
  local limit, lease_ms, holder = setting_number(ARGV[1]), setting_number(ARGV[2]), setting_number(ARGV[3])
  local rate_max, rate_per_ms = setting_number(ARGV[7]), setting_number(ARGV[8])
  local group_max = math.max(setting_number(ARGV[4]) or 1, 1)
  local dead_max_count, dead_max_age_ms = setting_number(ARGV[9]), setting_number(ARGV[10])
  local flags = ARGV[11] or ''
  local ahead_text = string.match(flags, 'a(%d+)')
  local ahead_ms = ahead_text and setting_number(ahead_text) or 0
  if ahead_ms > 1000 then return nil, 'claim ahead must be 0 to 1000 ms, got ' .. ahead_text end
  local cap_problem = check_events_cap(ARGV[12])
  if cap_problem then return nil, cap_problem end
  local acks = setting_number(ARGV[13])
  if not limit or not lease_ms or not holder or not acks or not rate_max or not dead_max_count then
    return nil, 'limit, lease ms, holder, rate, dead bounds and M must be numbers'
  end
  K.events_cap = setting_number(ARGV[12])
  K.gmax = group_max
  local wheel_problem = wheel_keys(K, CLAIM_WHEEL_FIRST_KEY, CLAIM_ACK_FIRST + CLAIM_ACK_WIDTH * acks)
  if wheel_problem then return nil, wheel_problem end
  -- The final records workers sent (flag 'f') are checked before anything is written
  -- (docs/DESIGN.md invariant 11): three bytes each, no parse.
  for i = 1, acks do
    local at = CLAIM_ACK_FIRST + CLAIM_ACK_WIDTH * (i - 1)
    local ack_flags = ARGV[at + 2]
    if ack_flags == 'f' or (ack_flags ~= '' and string.find(ack_flags, 'f', 1, true)) then
      local problem = rec_final_problem(ARGV[at + 3])
      if problem then return nil, 'ack ' .. i .. ' of ' .. acks .. ': ' .. problem end
    end
  end

  local now, now_us = now_ms_us()
  -- Jobs due by `cutoff` are taken: now, or a little after it when the worker claims ahead. The
  -- wheel takes whole buckets by their end, so it never claims ahead. Leases, rate limits, tokens
  -- and reaps count from now.
  local cutoff = K.wi and now or now + ahead_ms
  return {
    K = K,
    limit = limit,
    lease_ms = lease_ms,
    holder = holder,
    group_max = group_max,
    group_rate_max = setting_number(ARGV[5]) or 0,
    group_rate_per = setting_number(ARGV[6]) or 0,
    rate_max = rate_max,
    rate_per_ms = rate_per_ms,
    dead_max_count = dead_max_count,
    dead_max_age_ms = dead_max_age_ms,
    may_pop = string.find(flags, 'z', 1, true) ~= nil,
    has_zmscore = string.find(flags, 'm', 1, true) ~= nil,
    acks = acks,
    now = now,
    now_us = now_us,
    -- The scores this call writes (ZADD c, ZADD a, ZADD lim), as text made once (prelude.lua).
    now_text = ms_text(now),
    cutoff = cutoff,
    cutoff_text = ms_text(cutoff),
  }
end

-- The earlier of two times, -1 standing for "none".
local function claim_earliest(at, other)
  if at == -1 or (other ~= -1 and other < at) then return other end
  return at
end

-- The call's reply, finished: the one HSET j of every record it wrote (completed and leased),
-- the wheel's own fields after the jobs (wheel.lua wheel_reply), and last TIME in µs: `now` is
-- rounded down to the ms, and a worker that starts jobs claimed ahead at their due time bounds
-- the server clock by this exact reading instead.
local function claim_reply(c, out, records)
  call_chunked('HSET', c.K.j, records, 2)
  if c.K.wi then wheel_reply(c.K, out) end
  out[#out + 1] = c.now_us
  return out
end
