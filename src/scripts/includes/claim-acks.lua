-- Claim step 1, the acks (claim.lua): apply the finished jobs a worker sends with its claim, each
-- only while its own lease is valid (docs/DESIGN.md invariant 4), before anything is taken. First,
-- so the first write frees memory (ZREM a) and a full Redis (noeviction) still lets a worker drain.
-- Two parts: claim_ack_facts finds each ack's lease (the fencing: is its member in a, with a
-- deadline ahead), claim_ack_apply gives each ack its outcome and writes what the applied ones
-- did, each action one batch for the call. Another action per applied ack is one more batch
-- collected in claim_ack_apply's applied branch and written after its loop.
-- Inputs: the context (c.acks acks from ARGV[CLAIM_ACK_FIRST], 4 values each: member, known
--   deadline, flags, final record or result); `records`, the call's id/record pairs for its one
--   HSET j.
-- Outputs: the outcomes as one string of a letter per ack (O applied, A already applied, C lost:
--   cancelled, E lost: expired, N lost: not held); how many applied acks were of grouped jobs and
--   how many of others (the groups step gives the odd slot of a take to the side not served); the
--   earliest head due of a group an ack let run again (nil: none). Appends each completed record
--   to `records`.
-- Cost: the acks of one claim share the deadline it told the worker: such a deadline (3 acks or
--   more) is read once, its members without scores (ZRANGEBYSCORE a D D), where a read of each
--   ack's score made Redis format a double per ack and Lua parse it back; then one ZREM a for all.
--   Fewer acks whose known deadline is ahead (concurrency 1) are decided by their own ZREM a.
--   Members not found so, and acks whose known deadline has passed, are read (ZMSCORE a, or a
--   ZSCORE each without it). Then one ZADD c, and HDEL e / HDEL pg / group slots (groups.lua) only
--   for the acks that need them; a ZSCORE c or x per refused ack.

-- The acks step's bounds, one table (claim.lua loaded alone by EVAL has at most 200 locals; each
-- is read once per call): groups_skiplist_at, groups freed by this many acks at once go back in
-- turn with gr a skiplist (skiplist.lua); shared, a call with this many acks reads the deadline
-- its first ack ahead names once, fewer are decided by a ZREM each (one command per ack against
-- two for the read and the removal); shared_slack, members read at a shared deadline beyond the
-- acks that share it (other claims of the same ms made the same deadline), acks not among those
-- read are read by score, exactly as the others.
local CLAIM_ACK_BOUNDS = { groups_skiplist_at = 16, shared = 3, shared_slack = 64 }
-- What an ack's lease was found to be: its member is in a at the shared deadline the ack names;
-- valid and still in a (read by score); valid and already removed (its own ZREM); expired (read
-- by score). Not in a: nil.
local CLAIM_ACK_SHARED, CLAIM_ACK_IN_A, CLAIM_ACK_REMOVED, CLAIM_ACK_EXPIRED = 1, 2, 3, 4

-- The scores of `members` in a (nil for a member not there), one command on Redis >= 6.2.
local function claim_lease_scores(c, members)
  if c.s.has_zmscore then return redis.call('ZMSCORE', c.K.a, unpack(members)) end
  local scores = {}
  for i, member in ipairs(members) do scores[i] = redis.call('ZSCORE', c.K.a, member) end
  return scores
end

-- The lease members in a at deadline `known` (text): a set, member -> true. Up to `acks` of this
-- call name it, and CLAIM_ACK_BOUNDS.shared_slack more are read for the leases other claims made in the same
-- ms; an ack whose member is not among those read is read by score.
local function claim_members_at(c, known, acks)
  local members = redis.call('ZRANGEBYSCORE', c.K.a, known, known, 'LIMIT', '0', int_text(acks + CLAIM_ACK_BOUNDS.shared_slack))
  local set = {}
  for k = 1, #members do set[members[k]] = true end
  return set
end

-- Whether job `id` was acked earlier in this call (done_c holds now, id of each ack applied so
-- far): a resent ack that follows it finds it completed, as it would one call later.
local function claim_acked_before(done_c, id)
  for k = 2, #done_c, 2 do
    if done_c[k] == id then return true end
  end
  return false
end

-- The reason `member` cannot be a lease member, or nil.
local function claim_member_problem(i, acks, member)
  if string.find(member, '^%d+%.%d+|.') then return nil end
  return 'ack ' .. i .. ' of ' .. acks .. ': member ' .. member .. ' is not a lease member <claims>.<claimed at ms>|<id>'
end

-- Each ack's lease. Returns the reason an ack's member is not one (found before any write; then
-- nothing else), else nil, then fact[i] (CLAIM_ACK_*, nil: not in a), ahead[i] (true when ack
-- i's known deadline is ahead) and the shared deadline's members (member -> true; nil when none
-- was read).
local function claim_ack_facts(c)
  local K, acks, now, now_text = c.K, c.acks, c.now, c.now_text
  local now_digits = #now_text
  -- An ack whose known deadline is ahead: that deadline is one the server told the worker, and no
  -- lease is ever shortened (extend.lua), so the lease is valid exactly when its member is in a.
  -- The acks of one claim share its deadline: with 3 acks or more, the first one ahead (`shared`)
  -- is read once, and its members decide the acks naming it; every other ack is read by score
  -- (its known deadline passed, or differs, or its member was not at the shared deadline: an
  -- extend whose reply was lost moved it, or it is gone). Nothing is written until every member
  -- not found has been checked. Fewer acks (concurrency 1) are each decided by its own ZREM when
  -- their known deadline is ahead (one command where a read and a removal are two).
  local few = acks < CLAIM_ACK_BOUNDS.shared
  -- One ack alone: its ZREM writes nothing when its member is not there, and that is when it is
  -- checked, below.
  if few and acks > 1 then
    for i = 1, acks do
      local problem = claim_member_problem(i, acks, ARGV[CLAIM_ACK_FIRST + CLAIM_ACK_WIDTH * (i - 1)])
      if problem then return problem end
    end
  end
  -- Sized for one ack (concurrency 1): a table's first entry otherwise rehashes it.
  local fact, ahead = { nil }, { nil }
  local shared, present, read, read_at = nil, nil, nil, nil
  local last, last_ahead = nil, false
  for i = 1, acks do
    local at = CLAIM_ACK_FIRST + CLAIM_ACK_WIDTH * (i - 1)
    local text = ARGV[at + 1]
    -- Lua strings are interned: == compares pointers, so a repeated text is compared with now once.
    -- Epoch ms of the same number of digits compare as text: no strtod for the usual ack.
    if text ~= last then
      last = text
      if #text == now_digits then last_ahead = text > now_text else last_ahead = (tonumber(text) or 0) > now end
    end
    local by_score = not last_ahead
    if last_ahead then
      ahead[i] = true
      if few then
        if redis.call('ZREM', K.a, ARGV[at]) == 1 then fact[i] = CLAIM_ACK_REMOVED end
      else
        if not shared then
          shared = text
          present = claim_members_at(c, text, acks)
        end
        if text == shared and present[ARGV[at]] then fact[i] = CLAIM_ACK_SHARED else by_score = true end
      end
    end
    if by_score then
      read = read or {}
      read_at = read_at or {}
      read[#read + 1] = ARGV[at]
      read_at[#read_at + 1] = i
    end
  end
  if read then
    for first = 1, #read, UNPACK_CHUNK do
      local scores = claim_lease_scores(c, { unpack(read, first, math.min(#read, first + UNPACK_CHUNK - 1)) })
      for k = 1, #scores do
        local score = scores[k] and tonumber(scores[k])
        if score then fact[read_at[first + k - 1]] = score > now and CLAIM_ACK_IN_A or CLAIM_ACK_EXPIRED end
      end
    end
  end
  if not few or acks == 1 then
    for i = 1, acks do
      if not fact[i] then
        local problem = claim_member_problem(i, acks, ARGV[CLAIM_ACK_FIRST + CLAIM_ACK_WIDTH * (i - 1)])
        if problem then return problem end
      end
    end
  end
  return nil, fact, ahead, present
end

-- The completed record of job `id`, acked without a final record: its record's claim block and
-- max attempts kept (rec_final), and `result` after it when given. A record that cannot be read
-- (written by hand) gives the bare completed record, as delayq 0.2 wrote it.
local function claim_ack_final(K, id, result)
  local rec = redis.call('HGET', K.j, id)
  local h = rec and rec_parse(rec)
  if not h then
    return result and rec_completed_with_result(result) or REC_COMPLETED
  end
  if result then return rec_final(rec, h, REC_B_COMPLETED + REC_B_RESULT) .. result end
  return rec_final(rec, h, REC_B_COMPLETED)
end

-- Each ack's outcome, in ack order, and the applied acks' writes: their leases leave a (those
-- still there), their ids enter c, their completed records join `records`, their errors and
-- progress go, their groups' slots are freed. Returns the outcomes as one string, how many applied
-- acks were of grouped jobs and of others, and the earliest head due of a group freed.
local function claim_ack_apply(c, fact, ahead, present, records)
  local K, acks, now, now_text = c.K, c.acks, c.now, c.now_text
  -- A member acked twice in one call is applied once, the second is a resend: a member of the
  -- shared deadline is marked false in `present` once applied, any other goes in `done`.
  local done = nil
  -- The letters, made at the first that is not O: most calls apply every ack.
  local letters = nil
  local unremoved, done_c = { nil }, { nil, nil }
  local records_n, done_n = #records, 0
  -- Made when an ack needs them: most calls have no job with an error or progress, nor of a flow
  -- (id, then its result or false, per acked flow member).
  local error_ids, progress_ids, flow_done = nil, nil, nil
  -- Slots the acked jobs free, per group: one HINCRBY and one re-activation per group.
  local freed, freed_order = nil, nil
  local grouped = 0
  local emit_completed = c.s.emits_completed
  for i = 1, acks do
    local at = CLAIM_ACK_FIRST + CLAIM_ACK_WIDTH * (i - 1)
    local member = ARGV[at]
    local f = fact[i]
    local letter = 'O'
    if (done and done[member]) or (present and present[member] == false) then
      letter = 'A'
    elseif f == CLAIM_ACK_SHARED or f == CLAIM_ACK_IN_A or f == CLAIM_ACK_REMOVED then
      if f == CLAIM_ACK_SHARED then
        present[member] = false
      elseif acks > 1 then
        done = done or {}
        done[member] = true
      end
      if f ~= CLAIM_ACK_REMOVED then unremoved[#unremoved + 1] = member end
      -- The applied ack's actions: its completion, its record, its error and progress, its slot.
      local id, g = member_id_group(member)
      done_c[done_n + 1], done_c[done_n + 2] = now_text, id
      done_n = done_n + 2
      local ack_flags = ARGV[at + 2]
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
      if has_flags and string.find(ack_flags, 'w', 1, true) then
        flow_done = flow_done or {}
        flow_done[#flow_done + 1] = id
        flow_done[#flow_done + 1] = FLOW.ack_result(ack_flags, ARGV[at + 3])
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
      else
        -- An ack that sent no final record (a protocol client's, or a 0.2 worker's): the record
        -- the lease holds makes it, so the claim block stays. A job added again over this id
        -- starts its claims from there, and a resent ack of this lease can never match the new
        -- job's lease (add-existing.lua, add_fence_recreated). One HGET, off the worker's path.
        local with_result = has_flags and string.find(ack_flags, 'u', 1, true)
        records[records_n + 2] = claim_ack_final(K, id, with_result and ARGV[at + 3] or nil)
      end
      records_n = records_n + 2
    elseif f == CLAIM_ACK_EXPIRED then
      letter = 'E'
    else
      local id = member_id(member)
      if ahead[i] and (claim_acked_before(done_c, id) or redis.call('ZSCORE', K.c, id)) then
        -- A resent ack (its reply was lost) finds the job completed, within the lease it was sent
        -- in; one acked earlier in this call too, as it would a call later.
        letter = 'A'
      elseif redis.call('ZSCORE', K.x, id) then
        letter = 'C'
      else
        letter = 'N'
      end
    end
    if letter ~= 'O' and not letters then
      letters = {}
      for k = 1, i - 1 do letters[k] = 'O' end
    end
    if letters then letters[i] = letter end
  end
  -- The writes, the lease removal first (it frees memory).
  call_chunked('ZREM', K.a, unremoved, 1)
  call_chunked('ZADD', K.c, done_c, 2)
  if error_ids then call_chunked('HDEL', K.e, error_ids, 1) end
  if progress_ids then call_chunked('HDEL', K.pg, progress_ids, 1) end
  -- A flow member's completion, counted for its parent once (flow.lua): only for acks flagged 'w'.
  if flow_done then
    for k = 1, #flow_done, 2 do
      FLOW.ended(K, flow_done[k], 'completed', flow_done[k + 1] or nil, now, c.s.dead_max_count, c.s.dead_max_age_ms)
    end
  end
  local woke = nil
  if freed_order then
    -- Many groups back in turn at once: gr as a skiplist, where each ZADD is a lookup rather
    -- than a scan of a listpack of up to 128 groups (skiplist.lua).
    local added = #freed_order >= CLAIM_ACK_BOUNDS.groups_skiplist_at and skiplist_begin(K.gr)
    for _, g in ipairs(freed_order) do
      local due = group_release(K, g, now, freed[g])
      if due and (woke == nil or due < woke) then woke = due end
    end
    skiplist_end(K.gr, added)
  end
  if emit_completed then
    for i = 1, acks do
      if not letters or letters[i] == 'O' then
        local member = ARGV[CLAIM_ACK_FIRST + CLAIM_ACK_WIDTH * (i - 1)]
        emit(K, 'completed', member_id(member), 'at', now, 'lease', member)
      end
    end
  end
  -- One string for the call's outcomes: one reply element, where an element per ack was a
  -- Lua-to-RESP conversion each and a parsed buffer each in the worker.
  local outcomes = letters and table.concat(letters) or (acks == 1 and 'O' or string.rep('O', acks))
  return outcomes, grouped, done_n / 2 - grouped, woke
end

-- The acks of this call (see the file's header), after the reason they cannot be applied (nil
-- when they can; then nothing was written).
local function claim_acks(c, records)
  if c.acks == 0 then return nil, '', 0, 0, nil end
  local problem, fact, ahead, present = claim_ack_facts(c)
  if problem then return problem end
  return nil, claim_ack_apply(c, fact, ahead, present, records)
end
