-- add.lua, step 3: ids that exist (dedupe and onExists). Sorts the jobs, in order, into new ones
-- (placed by step 4, add-place.lua) and ids that exist, in Redis or earlier in this call, which
-- their mode answers: keep ('k', or the state the job is in), new ('T': a generated id taken;
-- the same job resent is its own answer) or replace ('R': the waiting job is replaced here).
--
-- Inputs:  call, jobs (steps 1 and 2), existing (HMGET j of jobs.ids), first (the job to start
--          at), done (add.lua: codes, times, written, wake; this step fills codes and times).
-- Outputs: fresh (the indexes of the new jobs), their count, and the job to go on from: n + 1, or
--          a job that replaces one this call created and step 4 has not placed yet (step 4 places
--          those first, then this step goes on from there). Writes only replaces (and the ZREM c
--          of a completed id added again, and the HDEL lg of its log lines); emits 'added' and 'replaced'.
-- Cost:    per new job a few table writes, no command (XADD with events: 'all'); per existing id
--          up to four ZSCOREs; per replace the old job's unplace and the new one's place.
-- Needs:   prelude.lua, args.lua, events.lua, record.lua, place.lua, wheel.lua, add-wake.lua.

-- The state of existing job `id` (record `rec`, header h or nil when unreadable): code and time.
local function add_state_of(K, id, rec, h)
  if h and h.completed then return 'C', tonumber(redis.call('ZSCORE', K.c, id)) or -1 end
  if h and h.cancelled then return 'X', tonumber(redis.call('ZSCORE', K.x, id)) or -1 end
  local died = redis.call('ZSCORE', K.d, id)
  if died then return 'D', tonumber(died) end
  if h and h.claims > 0 then
    local deadline = redis.call('ZSCORE', K.a, rec_member(h, id))
    if deadline then return 'A', tonumber(deadline) end
  end
  return 'k', nil
end

-- Claims a job created again over its completed record starts from. Its lease tokens
-- ("<claims>.<claimed at>") must not repeat the old job's: a resent ack of the old lease would
-- apply to the new one when both were claimed in the same ms. The completed record's claim block
-- (every ack keeps it: claim-acks.lua) gives the old count; a record without one (written by
-- delayq 0.2) starts the count half-way round its 16 bits, which an old job reaches only by
-- having been claimed 2^15 times.
local ADD_RECREATED_CLAIMS = 32768
local function add_fence_recreated(jobs, i, old)
  local oh = rec_parse(old)
  local claims = (oh and oh.claims > 0) and oh.claims or ADD_RECREATED_CLAIMS
  local h = jobs.heads[i]
  jobs.recs[i] = rec_claimed(jobs.recs[i], h, 0, claims, 0, 0, 0)
  jobs.heads[i] = rec_parse(jobs.recs[i])
end

-- Whether `rec` is a completed record (a replace adds its id again as a new job).
local function add_is_completed(rec)
  local h = rec_parse(rec)
  return h ~= nil and h.completed
end

-- The due time of waiting job `id` (header h), read where its class puts it; -1 when not found.
local function add_waiting_due(K, id, h)
  if K.wi then return wheel_due(K, id) or -1 end
  if not h then return -1 end
  if h.group then
    return redis.call('ZSCORE', K.gq, group_member(h.group, h.group_due, id)) and h.group_due or -1
  end
  if h.prio == 0 then return tonumber(redis.call('ZSCORE', K.s, id)) or -1 end
  local member = prio_member(h.prio, id)
  local due = redis.call('ZSCORE', K.p, member)
  if due then return tonumber(due) end
  due = redis.call('ZSCORE', K.r, member)
  return due and tonumber(due) % PLACE_TWO42 or -1
end

-- A resend of this very add (mode n): the stored record is the one sent, apart from what claims
-- and failures wrote since (the claim block and the E flag).
local function add_same_job(old, oh, new, nh)
  -- The G block's due time is the script's to write: the one stored is compared as sent.
  if nh.group and oh.group and #nh.group == #oh.group then
    new = rec_with_group_due(new, nh, oh.group_due)
  end
  return bit.band(oh.fa, 0x7E) == bit.band(nh.fa, 0x7E)
    and bit.band(oh.fb, bit.bnot(REC_B_ERROR)) == nh.fb
    and string.sub(old, oh.claim_end) == string.sub(new, nh.claim_end)
end

-- Job i, whose id has record `old`: its code and time by its mode; a replace writes the new job
-- over the waiting one. The attempts the waiting job used and its last error stay with it: a
-- retry stays a retry.
local function add_on_exists(call, jobs, i, old, done)
  local K, now = call.K, call.now
  local id, mode, due, rec, h = jobs.ids[i], jobs.modes[i], jobs.dues[i], jobs.recs[i], jobs.heads[i]
  local oh = rec_parse(old)
  local code, time = add_state_of(K, id, old, oh)
  if code == 'k' and mode == 'n' then
    if oh and add_same_job(old, oh, rec, h) then return code, add_waiting_due(K, id, oh) end
    return 'T', -1
  end
  if code ~= 'k' then return code, time end
  if mode ~= 'r' or not oh then return code, add_waiting_due(K, id, oh) end
  if not unplace_waiting(K, id, oh) then return code, -1 end
  local new = rec
  if h.group then
    new = rec_with_group_due(new, h, due)
    h.group_due = due
  end
  if oh.claims > 0 then
    new = rec_claimed(new, h, oh.attempts, oh.claims, oh.claimed_at, oh.run_due, oh.holder)
  end
  if oh.has_error then new = rec_with_error_flag(new, rec_parse(new), true) end
  -- A flow's job stays one (flags B 0x40, flow.lua): its ack must tell its parent.
  if bit.band(oh.fb, 0x40) ~= 0 then
    local nh = rec_parse(new)
    new = rec_flag_bytes(nh.fa, bit.bor(nh.fb, 0x40)) .. string.sub(new, nh.claim_at)
  end
  redis.call('HSET', K.j, id, new)
  add_placed(call, done, place_waiting(K, id, h, due, now), due)
  done.written[id] = i
  jobs.recs[i] = new
  emit(K, 'replaced', id, 'runAt', due, 'at', now)
  return 'R', due
end

-- Sort jobs first..n (see the header); codes and times of every job but the new ones' are set
-- here, and theirs too ('c', due): step 4 cannot refuse a job.
local function add_dedupe(call, jobs, existing, first, done)
  local K, n, now = call.K, call.n, call.now
  local ids, modes, dues, recs = jobs.ids, jobs.modes, jobs.dues, jobs.recs
  local codes, times, written = done.codes, done.times, done.written
  local emit_added = emits(K, 'added')
  local fresh, count = {}, 0
  for i = first, n do
    local id, mode = ids[i], modes[i]
    local old, earlier = existing[i], written[id]
    if earlier and mode == 'r' then
      -- Replaced within its own call: what this call wrote is the job it replaces, so that job
      -- must be written first.
      if earlier >= first and codes[earlier] == 'c' then return fresh, count, i end
      old = recs[earlier]
    end
    if earlier and mode ~= 'r' then
      if mode == 'n' then
        codes[i], times[i] = 'T', -1
      else
        codes[i], times[i] = 'k', dues[earlier]
      end
    elseif not old or (mode == 'r' and add_is_completed(old)) then
      if old then
        -- A replace of a job that completed (its record remembered while kept): the edit is a
        -- new job, as if the id were free; a keep still answers 'C'.
        -- The old job's log lines go with it: the new one's runs would show them as its own.
        redis.call('ZREM', K.c, id)
        redis.call('HDEL', K.lg, id)
        add_fence_recreated(jobs, i, old)
      end
      written[id] = i
      count = count + 1
      fresh[count] = i
      codes[i], times[i] = 'c', dues[i]
      if emit_added then emit(K, 'added', id, 'runAt', dues[i], 'at', now) end
    else
      codes[i], times[i] = add_on_exists(call, jobs, i, old, done)
    end
  end
  return fresh, count, n + 1
end
