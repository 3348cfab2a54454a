-- Claim step 1, the acks (claim.lua): apply the finished jobs a worker sends with its claim, each
-- only while its own lease is valid (docs/DESIGN.md invariant 4), before anything is taken. First,
-- so the first write frees memory (ZREM a) and a full Redis (noeviction) still lets a worker drain.
-- Two parts: claim_ack_decide settles each ack's fate (the fencing), claim_ack_apply writes what
-- the applied ones did; an action per applied ack is one more batch in claim_ack_apply's loop.
-- Inputs: the context (c.acks acks from ARGV[CLAIM_ACK_FIRST], 4 values each: member, known
--   deadline, flags, final record or result); `records`, the call's id/record pairs for its one
--   HSET j.
-- Outputs: the outcomes as one string of a letter per ack (O applied, A already applied, C lost:
--   cancelled, E lost: expired, N lost: not held); how many applied acks were of grouped jobs and
--   how many of others (the groups step gives the odd slot of a claim to the side not served); the
--   earliest head due of a group an ack let run again (nil: none). Appends each completed record
--   to `records`.
-- Cost: a ZREM a per ack whose known deadline is ahead (its answer decides; ZMSCORE a, or a ZSCORE
--   each without it, and one ZREM a for the others), ZADD c, and HDEL e / HDEL pg / group slots
--   (groups.lua) only for the acks that need them; a ZSCORE c or x per refused ack.

-- Groups freed by this many acks at once go back in turn with gr a skiplist (skiplist.lua).
local CLAIM_GROUPS_SKIPLIST_AT = 16

-- The scores of `members` in a, one command on Redis >= 6.2.
local function claim_lease_scores(c, members)
  if c.has_zmscore then return redis.call('ZMSCORE', c.K.a, unpack(members)) end
  local scores = {}
  for i, member in ipairs(members) do scores[i] = redis.call('ZSCORE', c.K.a, member) end
  return scores
end

-- Each ack's fate. Returns the ARGV index of each ack to apply (its member), the members among
-- them still in a (the others' own ZREM removed them), and the outcome letters (a table).
local function claim_ack_decide(c)
  local K, acks, now, now_text = c.K, c.acks, c.now, c.now_text
  -- Each ack whose known deadline is still ahead is decided by its own ZREM: that deadline is one
  -- the server told the worker, and no lease is ever shortened (extend.lua), so the lease is valid
  -- when its member is there (docs/DESIGN.md invariant 4). The rest are read, and removed in
  -- claim_ack_apply. held[i]: ack i's lease was valid and its member is gone from a.
  local held, read, read_at = {}, nil, nil
  for i = 1, acks do
    local at = CLAIM_ACK_FIRST + CLAIM_ACK_WIDTH * (i - 1)
    local known = ARGV[at + 1]
    -- Epoch ms of the same number of digits compare as text: no strtod for the usual ack.
    local known_ahead
    if #known == #now_text then known_ahead = known > now_text else known_ahead = (tonumber(known) or 0) > now end
    if known_ahead then
      held[i] = redis.call('ZREM', K.a, ARGV[at]) == 1
    else
      read = read or {}
      read_at = read_at or {}
      read[#read + 1] = ARGV[at]
      read_at[#read_at + 1] = i
    end
  end
  -- The read leases' scores by ack, made only when some were read (not at concurrency 1, usually).
  local scores = nil
  if read then
    scores = {}
    for first = 1, #read, UNPACK_CHUNK do
      local part = claim_lease_scores(c, { unpack(read, first, math.min(#read, first + UNPACK_CHUNK - 1)) })
      for k = 1, #part do scores[read_at[first + k - 1]] = part[k] end
    end
  end
  local applied, unremoved, letters = {}, nil, {}
  -- A member acked twice in one call is applied once; the second is a resend. One ack cannot be.
  local seen = acks > 1 and {} or nil
  for i = 1, acks do
    local at = CLAIM_ACK_FIRST + CLAIM_ACK_WIDTH * (i - 1)
    local member = ARGV[at]
    local deadline = held[i] and now + 1 or (scores and scores[i] and tonumber(scores[i]))
    if seen and seen[member] then
      letters[i] = 'A'
    elseif deadline and deadline > now then
      if seen then seen[member] = true end
      if not held[i] then
        unremoved = unremoved or {}
        unremoved[#unremoved + 1] = member
      end
      applied[#applied + 1] = at
      letters[i] = 'O'
    else
      local id = member_id(member)
      if not deadline and tonumber(ARGV[at + 1]) > now and redis.call('ZSCORE', K.c, id) then
        -- A resent ack (its reply was lost) finds the job completed, within the lease it was sent in.
        letters[i] = 'A'
      elseif deadline then
        letters[i] = 'E'
      elseif redis.call('ZSCORE', K.x, id) then
        letters[i] = 'C'
      else
        letters[i] = 'N'
      end
    end
  end
  return applied, unremoved, letters
end

-- The applied acks' writes: the leases read in claim_ack_decide leave a, the ids enter c, the
-- completed records join `records`, errors and progress go, the groups' slots are freed. Returns
-- how many were of grouped jobs and of others, and the earliest head due of a group freed.
local function claim_ack_apply(c, applied, unremoved, records)
  local count = #applied
  if count == 0 then return 0, 0, nil end
  local K, now, now_text = c.K, c.now, c.now_text
  if unremoved then call_chunked('ZREM', K.a, unremoved, 1) end
  local done_c = {}
  local records_n = #records
  -- Made when an ack needs them: most calls have no job with an error or progress.
  local error_ids, progress_ids = nil, nil
  local emit_completed = emits(K, 'completed')
  -- Slots the acked jobs free, per group: one HINCRBY and one re-activation per group.
  local freed, freed_order = nil, nil
  local grouped = 0
  for k = 1, count do
    local at = applied[k]
    local member = ARGV[at]
    local id, g = member_id_group(member)
    local ack_flags = ARGV[at + 2] or ''
    done_c[2 * k - 1], done_c[2 * k] = now_text, id
    -- Most acks have no flag but 'f' (the final record follows): the searches saved per job.
    local final = nil
    if ack_flags == 'f' then
      final, ack_flags = ARGV[at + 3], ''
    elseif ack_flags ~= '' and string.find(ack_flags, 'f', 1, true) then
      final = ARGV[at + 3]
    end
    local has_flags = ack_flags ~= ''
    if has_flags and string.find(ack_flags, 'e', 1, true) then
      error_ids = error_ids or {}
      error_ids[#error_ids + 1] = id
    end
    if has_flags and string.find(ack_flags, 'p', 1, true) then
      progress_ids = progress_ids or {}
      progress_ids[#progress_ids + 1] = id
    end
    if g then
      grouped = grouped + 1
      if not freed then freed, freed_order = {}, {} end
      if not freed[g] then freed_order[#freed_order + 1] = g end
      freed[g] = (freed[g] or 0) + 1
    end
    records[records_n + 1] = id
    if final then
      records[records_n + 2] = final
    elseif has_flags and string.find(ack_flags, 'u', 1, true) then
      records[records_n + 2] = rec_completed_with_result(ARGV[at + 3])
    else
      records[records_n + 2] = REC_COMPLETED
    end
    records_n = records_n + 2
    if emit_completed then emit(K, 'completed', id, 'at', now, 'lease', member) end
  end
  call_chunked('ZADD', K.c, done_c, 2)
  if error_ids then call_chunked('HDEL', K.e, error_ids, 1) end
  if progress_ids then call_chunked('HDEL', K.pg, progress_ids, 1) end
  local woke = nil
  if freed_order then
    -- Many groups back in turn at once: gr as a skiplist, where each ZADD is a lookup rather
    -- than a scan of a listpack of up to 128 groups (skiplist.lua).
    local added = #freed_order >= CLAIM_GROUPS_SKIPLIST_AT and skiplist_begin(K.gr)
    for _, g in ipairs(freed_order) do
      local due = group_release(K, g, now, freed[g])
      if due and (woke == nil or due < woke) then woke = due end
    end
    skiplist_end(K.gr, added)
  end
  return grouped, count - grouped, woke
end

-- The acks of this call, decided and applied (see the file's header).
local function claim_acks(c, records)
  if c.acks == 0 then return '', 0, 0, nil end
  local applied, unremoved, letters = claim_ack_decide(c)
  local grouped, other, woke = claim_ack_apply(c, applied, unremoved, records)
  -- One ack (concurrency 1, every job): its letter is the string; no concatenation.
  return c.acks == 1 and letters[1] or table.concat(letters), grouped, other, woke
end
