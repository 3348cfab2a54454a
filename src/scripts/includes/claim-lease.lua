-- Claim step 6, the lease (claim.lua): lease the taken jobs to the caller. Each record gets its
-- new claim block (attempts + 1, claims + 1, claimed at now, the due of this run, the holder) and
-- each job a lease member "<claims>.<now>|<id>[\0<group>]" in a, scored by now + lease ms. A
-- taken id without a readable record can only come from outside delayq (a manual HDEL, a newer
-- writer): it is buried with its reason rather than dropped, so it is seen (invariant 5), and a
-- grouped one gives its slot back.
-- Inputs: the context; the taken ids, their dues and their groups (claim-classes.lua); `records`,
--   the call's id/record pairs for its one HSET j; `out`, the reply.
-- Outputs: how many jobs were leased. Appends each leased record to `records` and lease member,
--   record and due per job to `out`.
-- Cost: HMGET j (one per 1000 ids), one ZADD a, and with a queue rate limit one ZADD lim. Per
--   job of default options (the usual new job) one string.sub and one concatenation: its claim
--   block is made of parts made once per call and its due packed once per due time; other headers
--   one struct.pack (record.lua rec_claimed). A lease of 16 jobs or more also makes sure a is a
--   skiplist (skiplist.lua). Burials cost their own commands (bury.lua).

-- Claims are a uint16 in the record; past it they wrap (the claim time still tells tokens apart).
local CLAIM_MAX_CLAIMS = 65535
-- A claim that leases this many jobs makes sure `a` is a skiplist (skiplist.lua): with that many
-- leases a listpack's searches cost more than the check.
local CLAIM_LEASES_SKIPLIST_AT = 16

-- A taken job that cannot be leased: buried with why, its group slot freed.
local function claim_bury_unleasable(c, id, rec, h, why, group)
  local K, now = c.K, c.now
  if group then group_release(K, group, now) end
  if h then why = 'record is final (completed or cancelled) but the job was waiting' end
  local name = rec and 'BadRecord' or 'MissingJob'
  local message = rec and ('record cannot be read: ' .. tostring(why))
    or 'job data missing from Redis (removed outside delayq)'
  redis.call('HSET', K.e, id, cjson.encode({ name = name, message = message, at = now, attempt = 0 }))
  if rec then
    bury(K, id, rec, now, 0, c.s.dead_max_count, c.s.dead_max_age_ms)
  else
    -- Nothing to keep in j: the dead entry and the error say what happened.
    redis.call('ZADD', K.d, now, id)
    redis.call('HINCRBY', K.n, 'dead', 1)
    emit(K, 'dead', id, 'attempt', 0, 'at', now)
    trim_dead(K, now, c.s.dead_max_count, c.s.dead_max_age_ms)
  end
end

local function claim_lease(c, ids, dues, groups, records, out)
  local count = #ids
  if count == 0 then return 0 end
  local K, now, holder = c.K, c.now, c.s.holder
  local recs
  if count <= UNPACK_CHUNK then
    recs = redis.call('HMGET', K.j, unpack(ids))
  else
    recs = {}
    for first = 1, count, UNPACK_CHUNK do
      local part = redis.call('HMGET', K.j, unpack(ids, first, math.min(count, first + UNPACK_CHUNK - 1)))
      for k = 1, #part do recs[first + k - 1] = part[k] end
    end
  end
  local deadline_text = ms_text(now + c.s.lease_ms)
  -- "1.<now>|", the token of every first claim this call makes, and its ".<now>|" for the others
  -- (made at the first of them).
  local first_token = '1.' .. c.now_text .. '|'
  local token_tail = nil
  -- A new job of default options (record '\1\0' + payload, known by its two bytes) is leased as
  -- '\1\1' + the claim block {attempts 1, claims 1, now, its due, the holder} + its payload: the
  -- block's fixed parts made once per call, its due packed once per due time (a batch of jobs
  -- added together shares one), where struct.pack made the whole header per job.
  local fresh_head = '\1\1\0\1\0\1' .. struct.pack('>I6', now)
  local holder_tail = c.s.holder_packed
  local packed_for, packed_due = nil, nil
  local zadd, starts = { nil, nil }, nil
  local rate_limited = c.s.rate_max > 0
  local emit_claimed = c.s.emits_claimed
  -- Where the next entries of records, zadd and out go: counted here, where `#t + 1` searched each
  -- table's array part for its end, several times per job.
  local records_n, zadd_n, out_n, leased_n = #records, 0, #out, 0
  for i = 1, count do
    local id, rec = ids[i], recs[i]
    -- A record of default options (header '\1\0') is known by its two bytes, without rec_parse's
    -- call and the reads of its shared h (never completed or cancelled): the usual new job.
    local h, why, fresh = nil, 'no record', false
    if rec then
      local format, fa = string.byte(rec, 1, 2)
      if fa == 0 and format == REC_FORMAT then
        fresh = true
      else
        h, why = rec_parse(rec)
      end
    end
    if fresh or (h and not h.completed and not h.cancelled) then
      local due = dues[i]
      local leased, member
      if fresh then
        if due ~= packed_for then packed_for, packed_due = due, struct.pack('>I6', due) end
        leased = fresh_head .. packed_due .. holder_tail .. string.sub(rec, 3)
        member = first_token .. id
      else
        local claims = h.claims % CLAIM_MAX_CLAIMS + 1
        leased = rec_claimed(rec, h, h.attempts + 1, claims, now, due, holder)
        -- claims < 2^16: '%d' is exact on any build, and cheaper than `..`'s float format '%.14g'.
        if claims == 1 then
          member = first_token .. id
        else
          token_tail = token_tail or string.sub(first_token, 2)
          member = string.format('%d', claims) .. token_tail .. id
        end
      end
      -- A grouped job's member names its group, so whatever ends the lease frees the slot
      -- without reading the record.
      local group = groups[i]
      if group then member = member .. '\0' .. group end
      records[records_n + 1], records[records_n + 2] = id, leased
      records_n = records_n + 2
      zadd[zadd_n + 1], zadd[zadd_n + 2] = deadline_text, member
      zadd_n = zadd_n + 2
      if rate_limited then
        starts = starts or {}
        starts[#starts + 1] = c.now_text
        starts[#starts + 1] = member
      end
      -- The token is the member up to its '|': the worker slices it there, not from a reply
      -- element of its own (one Lua-to-RESP conversion and one client buffer less per job).
      out[out_n + 1], out[out_n + 2], out[out_n + 3] = member, leased, due
      out_n = out_n + 3
      leased_n = leased_n + 1
      if emit_claimed then
        emit(K, 'claimed', id, 'attempt', fresh and 1 or h.attempts + 1, 'runAt', due, 'at', now, 'holder', holder)
      end
    else
      claim_bury_unleasable(c, id, rec, h, why, groups[i])
    end
  end
  if leased_n > 0 then
    local added = leased_n >= CLAIM_LEASES_SKIPLIST_AT and skiplist_begin(K.a)
    if zadd_n <= 2 * UNPACK_CHUNK then
      redis.call('ZADD', K.a, unpack(zadd, 1, zadd_n))
    else
      call_chunked('ZADD', K.a, zadd, 2)
    end
    if added then skiplist_end(K.a, added) end
    if starts then call_chunked('ZADD', K.lim, starts, 2) end
  end
  return leased_n
end
