-- The claim's context (claim.lua): what one call was asked, checked whole before anything is
-- written (docs/DESIGN.md invariant 11), made once per call and handed to every step, which reads
-- it and writes nothing in it (each step returns what it found).
-- Inputs: KEYS and ARGV as claim.lua's header lists them.
-- Output: the context c, or nil and the reason KEYS or ARGV cannot be used, naming the argument
--   (claim.lua refuses the call with it, DELAYQ_BAD_ARG). c.K: the keys by name (and what the
--   shared includes read there: events_cap, gmax, the wheel's); c.s: the settings (ARGV[2] to
--   ARGV[12]) as numbers and flags; c.limit and c.acks; the clock (now, now_us, now_text) and
--   cutoff, the latest due a take may lease, with its text.
-- Cost: TIME; the settings' texts joined (one string) and looked up, checked and parsed only the
--   first time a function library sees them; per ack, its flags (three bytes of a final record)
--   and its known deadline only where it differs from the ack before. The
--   checks: `npm run bench:redis-instructions -- --phase=empty` (claims of none, no acks) and
--   --phase=claim (50 acks a call).

-- ARGV index of the first ack's member, and the values per ack (member, known deadline, flags,
-- final record or result).
local CLAIM_ACK_FIRST = 14
local CLAIM_ACK_WIDTH = 4
-- KEYS of every strategy; the wheel's (ready, index, count, then bucket lists) follow.
local CLAIM_KEYS = 22
-- The largest claim, and the most acks, one call takes.
local CLAIM_MAX_LIMIT = 1000000
-- What the settings' texts mean, by the texts joined: a worker sends the same ones in every call,
-- so each set is checked and parsed once per function library (as prelude.lua's SETTING_MEMO,
-- the answer of a pure function, so a call behaves as its EVAL script, whose memo starts empty).
-- Only accepted settings are kept: a refusal is worked out again, so its reason always names its
-- own argument (texts with a ',' inside could join alike; no accepted text has one). Emptied at
-- CLAIM_SETTINGS_MAX sets, so ever-new texts cannot grow it without bound.
local CLAIM_SETTINGS_MEMO = { by_text = {}, size = 0 }
local CLAIM_SETTINGS_MAX = 256
-- Whole numbers by their text (the same memo rule): the limit and the ack count, of which a
-- worker sends few different texts.
local CLAIM_WHOLE_MEMO = { by_text = {}, size = 0 }

-- The whole number `text` is (plain decimal digits, at most `digits` of them), or nil.
local function claim_whole(text, digits)
  local memo = CLAIM_WHOLE_MEMO
  local n = memo.by_text[text]
  if n == nil then
    if type(text) ~= 'string' or not string.match(text, '^%d+$') then return nil end
    if memo.size >= CLAIM_SETTINGS_MAX then memo.by_text, memo.size = {}, 0 end
    n = tonumber(text)
    memo.by_text[text] = n
    memo.size = memo.size + 1
  end
  if #text > digits then return nil end
  return n
end

-- A setting's reason to be refused: ARGV[i], its name, its text and what it must be.
local function claim_setting_problem(i, name, must)
  return 'ARGV[' .. i .. '] ' .. name .. ' ' .. tostring(ARGV[i]) .. ' is not ' .. must
end

-- ARGV[2] to ARGV[12], checked: the settings as numbers, or nil and the reason.
local function claim_settings_of_texts()
  local lease_ms = claim_whole(ARGV[2], 15)
  if not lease_ms or lease_ms < 1 then return nil, claim_setting_problem(2, 'lease ms', 'a whole number of ms >= 1') end
  local holder = claim_whole(ARGV[3], 10)
  if not holder or holder > 4294967295 then return nil, claim_setting_problem(3, 'holder', 'a whole number 0..4294967295') end
  local gmax_problem = check_group_concurrency(ARGV[4], 'ARGV[4] group concurrency')
  if gmax_problem then return nil, gmax_problem end
  local numbers = {}
  local NAMES = { [5] = 'group rate max', [6] = 'group rate per ms', [7] = 'rate max', [8] = 'rate per ms',
    [9] = 'dead max count', [10] = 'dead max age ms' }
  for i = 5, 10 do
    numbers[i] = claim_whole(ARGV[i], 15)
    if not numbers[i] then return nil, claim_setting_problem(i, NAMES[i], 'a whole number >= 0 (digits only)') end
  end
  for i = 5, 7, 2 do
    if numbers[i] > 0 and numbers[i + 1] < 1 then
      return nil, 'ARGV[' .. i .. '] ' .. NAMES[i] .. ' ' .. ARGV[i] .. ' needs ARGV[' .. (i + 1) .. '] ' .. NAMES[i + 1]
        .. ' >= 1, got ' .. ARGV[i + 1] .. ' (0, 0: no limit)'
    end
  end
  local flags = ARGV[11]
  local ahead_text = type(flags) == 'string' and string.match(flags, 'a(%d+)')
  local rest = type(flags) == 'string' and string.gsub(string.gsub(flags, 'a%d+', '', 1), '[zm]', '')
  if rest ~= '' or string.find(flags, 'z.*z') or string.find(flags, 'm.*m') then
    return nil, claim_setting_problem(11, 'flags', "letters z, m and at most one a<ms>")
  end
  local ahead_ms = ahead_text and claim_whole(ahead_text, 4) or 0
  if not ahead_ms or ahead_ms > 1000 then
    return nil, 'ARGV[11] flags: claim ahead must be 0 to 1000 ms, got ' .. tostring(ahead_text)
  end
  local cap_problem = check_events_cap(ARGV[12])
  if cap_problem then return nil, 'ARGV[12] ' .. cap_problem end
  return {
    lease_ms = lease_ms,
    holder = holder,
    -- 0 means none recorded: the claim then bounds a group by 1.
    group_max = math.max(tonumber(ARGV[4]), 1),
    group_rate_max = numbers[5],
    group_rate_per = numbers[6],
    rate_max = numbers[7],
    rate_per_ms = numbers[8],
    dead_max_count = numbers[9],
    dead_max_age_ms = numbers[10],
    may_pop = string.find(flags, 'z', 1, true) ~= nil,
    has_zmscore = string.find(flags, 'm', 1, true) ~= nil,
    ahead_ms = ahead_ms,
    events_cap = tonumber(ARGV[12]),
    -- What each call would otherwise work out again from these: the claim block's last field, and
    -- whether the routine events are written (events.lua).
    holder_packed = struct.pack('>I4', holder),
    emits_claimed = emits({ events_cap = tonumber(ARGV[12]) }, 'claimed'),
    emits_completed = emits({ events_cap = tonumber(ARGV[12]) }, 'completed'),
  }
end

-- The settings of this call: from the memo, or checked and kept.
local function claim_settings()
  local text = table.concat(ARGV, ',', 2, 12)
  local memo = CLAIM_SETTINGS_MEMO
  local s = memo.by_text[text]
  if s then return s end
  local problem
  s, problem = claim_settings_of_texts()
  if not s then return nil, problem end
  if memo.size >= CLAIM_SETTINGS_MAX then memo.by_text, memo.size = {}, 0 end
  memo.by_text[text] = s
  memo.size = memo.size + 1
  return s
end

-- Ack i's reason to be refused when its flags are not '' or 'f' (the usual two, checked where
-- the acks are walked): letters e, p, w and f or u, each once, and the value that follows them (a
-- final record, checked by its three bytes; a result; or nothing).
local function claim_ack_flags_problem(flags, value)
  if type(flags) ~= 'string' or string.find(flags, '[^epwfu]') or string.find(flags, 'e.*e')
    or string.find(flags, 'p.*p') or string.find(flags, 'w.*w') or string.find(flags, '[fu].*[fu]') then
    return 'flags ' .. tostring(flags) .. ' are not letters e, p, w and one of f or u, each once'
  end
  if string.find(flags, 'f', 1, true) then return rec_final_problem(value) end
  if not string.find(flags, 'u', 1, true) and value ~= '' then
    return 'flags ' .. flags .. ' have no f or u, so nothing may follow them (got ' .. #value .. ' bytes)'
  end
  return nil
end

local function claim_context()
  -- The usual case is checked and looked up inline (the KEYS count, the memos of the limit, the ack
  -- count and the settings): a claim of one job pays each Lua call it makes. The helpers then name
  -- what is wrong, or check and keep what is new.
  local key_count = #KEYS
  if key_count ~= CLAIM_KEYS and key_count < CLAIM_KEYS + 3 then return nil, check_key_count(CLAIM_KEYS, true) end
  if #ARGV < CLAIM_ACK_FIRST - 1 then
    return nil, 'ARGV has ' .. #ARGV .. ' values; claim takes 13, then 4 per ack (claim.lua\'s header)'
  end
  local limit_text, acks_text = ARGV[1], ARGV[13]
  local limit = #limit_text <= 7 and CLAIM_WHOLE_MEMO.by_text[limit_text] or claim_whole(limit_text, 7)
  if not limit or limit > CLAIM_MAX_LIMIT then
    return nil, claim_setting_problem(1, 'limit', 'a whole number 0..' .. CLAIM_MAX_LIMIT)
  end
  local acks = #acks_text <= 7 and CLAIM_WHOLE_MEMO.by_text[acks_text] or claim_whole(acks_text, 7)
  if not acks or acks > CLAIM_MAX_LIMIT then
    return nil, claim_setting_problem(13, 'M (acks)', 'a whole number 0..' .. CLAIM_MAX_LIMIT)
  end
  -- The arguments there must be: 13, 4 per ack, and with the wheel its granularity and a bucket
  -- start per bucket list in KEYS (wheel.lua).
  local wheel_args = key_count > CLAIM_KEYS and key_count - CLAIM_KEYS - 3 + 1 or 0
  local expected = CLAIM_ACK_FIRST - 1 + CLAIM_ACK_WIDTH * acks + wheel_args
  if #ARGV ~= expected then
    return nil, 'ARGV has ' .. #ARGV .. ' values; with ' .. #KEYS .. ' KEYS and M = ' .. acks .. ' acks claim takes '
      .. expected .. ' (13, 4 per ack' .. (wheel_args > 0 and ', then the granularity and a start per bucket list)' or ')')
  end
  local s = CLAIM_SETTINGS_MEMO.by_text[table.concat(ARGV, ',', 2, 12)]
  if not s then
    local problem
    s, problem = claim_settings()
    if not s then return nil, problem end
  end
  -- The one place the KEYS order is written in Lua: test/hotpath/claim-keys.test.ts checks it
  -- against the header and against claimKeys() (src/operations/claim.ts).
  local K = {
    s = KEYS[1], p = KEYS[2], r = KEYS[3], gq = KEYS[4], gw = KEYS[5], gr = KEYS[6], gc = KEYS[7],
    j = KEYS[8], a = KEYS[9], c = KEYS[10], x = KEYS[11], e = KEYS[12], d = KEYS[13], z = KEYS[14],
    lim = KEYS[15], ev = KEYS[16], w = KEYS[17], n = KEYS[18], pg = KEYS[19], gn = KEYS[20], f = KEYS[21], fw = KEYS[22],
    events = KEYS[16], events_cap = s.events_cap, gmax = s.group_max,
  }
  if key_count > CLAIM_KEYS then
    local wheel_problem = wheel_keys(K, CLAIM_KEYS + 1, CLAIM_ACK_FIRST + CLAIM_ACK_WIDTH * acks)
    if wheel_problem then return nil, wheel_problem end
  end
  -- Every ack, before anything is written: a whole known deadline (the acks of one claim repeat
  -- one, whose text is checked once: Lua strings are interned, == compares pointers), and its
  -- flags with what follows them. A member's form is checked by the acks step, where it finds a
  -- member that no lease has (any other is one a claim wrote), still before any write.
  -- A worker's usual final record (claimed, default max attempts, no result: 01 81 08 and the 20
  -- bytes of its claim block) is recognised here by its bytes; any other goes to rec_final_problem.
  local last_known = nil
  for i = 1, acks do
    local at = CLAIM_ACK_FIRST + CLAIM_ACK_WIDTH * (i - 1)
    local known, flags, value = ARGV[at + 1], ARGV[at + 2], ARGV[at + 3]
    local problem = nil
    if known ~= last_known and (#known == 0 or #known > 15 or string.find(known, '%D')) then
      problem = 'known deadline ' .. known .. ' is not a whole number of ms'
    elseif flags == 'f' then
      local format, fa, fb = string.byte(value, 1, 3)
      if fb ~= 0x08 or fa ~= 0x81 or format ~= 1 or #value < 23 then problem = rec_final_problem(value) end
    elseif flags == '' then
      if value ~= '' then problem = 'flags are empty, so nothing may follow them (got ' .. #value .. ' bytes)' end
    else
      problem = claim_ack_flags_problem(flags, value)
    end
    if problem then return nil, 'ack ' .. i .. ' of ' .. acks .. ': ' .. problem end
    last_known = known
  end

  local now, now_us = now_ms_us()
  -- Jobs due by `cutoff` are taken: now, or a little after it when the worker claims ahead. The
  -- wheel takes whole buckets by their end, so it never claims ahead. Leases, rate limits, tokens
  -- and reaps count from now.
  local cutoff = K.wi and now or now + s.ahead_ms
  -- The scores this call writes (ZADD c, ZADD a, ZADD lim), as text made once (prelude.lua).
  local now_text = ms_text(now)
  return {
    K = K,
    s = s,
    limit = limit,
    acks = acks,
    now = now,
    now_us = now_us,
    now_text = now_text,
    cutoff = cutoff,
    cutoff_text = cutoff == now and now_text or ms_text(cutoff),
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
  local n = #records
  if n > 0 and n <= 2 * UNPACK_CHUNK then
    redis.call('HSET', c.K.j, unpack(records, 1, n))
  elseif n > 0 then
    call_chunked('HSET', c.K.j, records, 2)
  end
  if c.K.wi then wheel_reply(c.K, out) end
  out[#out + 1] = c.now_us
  return out
end
