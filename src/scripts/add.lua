-- add: accept a batch of jobs, each a ready-made record (docs/design/HOT-PATH.md §4.1).
--
-- KEYS[1] s   ZSET id -> due ms: waiting jobs of the default class
-- KEYS[2] p   ZSET "<prio>:<id>" -> due ms: waiting prioritized jobs, not due yet
-- KEYS[3] r   ZSET "<prio>:<id>" -> (prio + 1024) * 2^42 + due: due prioritized jobs
-- KEYS[4] gq  ZSET, scores 0: "<group>\0<due: 6 bytes BE><id>" of waiting grouped jobs
-- KEYS[5] gw  ZSET group -> due of its head: groups with a free slot whose head is not due
-- KEYS[6] gr  ZSET group -> turn: groups with a free slot and a due head
-- KEYS[7] gc  HASH group -> running count (read to tell whether a group has a free slot)
-- KEYS[8] j   HASH id -> record
-- KEYS[9] c   ZSET id -> completed at ms (the id's completed record is in j)
-- KEYS[10] x  ZSET id -> cancelled at ms
-- KEYS[11] d  ZSET id -> died at ms
-- KEYS[12] w  channel: wake messages
-- KEYS[13] n  HASH of counters (`added`)
-- KEYS[14] ev STREAM of events
-- KEYS[15] a  ZSET lease member -> deadline: to answer "active" for an id that is running
-- KEYS[16...] wheel strategy only: ready, wheel index, wheel count, then bucket lists (wheel.lua)
-- ARGV[1] N (1..999999), ARGV[2] elapsed: whole ms from the add() call to the send (client's
--         monotonic clock, rounded down), optionally followed by ':' and the most the server's
--         clock read at the call (epoch ms, rounded down; the client bounds it from earlier
--         replies' TIME, src/server-time-bound.ts), ARGV[3] events cap (negative: failures only, 0: off,
--         events.lua), ARGV[4] group concurrency (the queue's recorded one; 0: unknown, so a
--         group with waiting jobs is put in turn and the claim checks its slots), then 5 per job:
--         id; mode: 'd' (when = delay ms from the add() call) or 'a' (when = epoch ms), followed by
--         'k' (keep an existing job), 'r' (replace a waiting one) or 'n' (a generated id: an
--         existing one is a collision); when; record (header + payload, src/record/); class: ''
--         (default), 'p<prio>' (must repeat the header's priority) or 'g<group>' (must repeat the
--         header's group; the script writes the G block's due time). Wheel strategy only, after them: granularity ms and the start of
--         each bucket list in KEYS.
-- Returns: { code_1, time_1, ..., now µs }: per job a code and a time, then the script's TIME in
--          epoch µs (producers bound the server's clock with it; the wheel guesses buckets by it).
--          c created (time = due), k exists and kept (its due time, -1 when not waiting), R
--          replaced (new due), A running (lease deadline), C completed (completed at), X cancelled
--          (cancelled at), D dead (died at), T the generated id is taken (-1: nothing written; the
--          client draws a new id and adds that job again).
--          Error 'DELAYQ_BAD_ARG job <i> of <N>: <reason>' (nothing written) when an argument is
--          malformed: id, mode, when, a record that cannot be read or is not a new job's, a class
--          that disagrees with the header. Wheel: 'DELAYQ_WRONG_BUCKET <start>,...' when a bucket
--          it needs was not passed (nothing written).
-- Cost: per batch TIME, HMGET j, ZRANGE s 0 0, HSET j, ZADD s, HINCRBY n: no per-job command for
--          new jobs of the default class; O(log n) per job.
-- Guarantee: every job is checked before anything is written, and the batch is written in one
--          atomic step. A delayed job is due at now - elapsed + delay by the server's clock, so
--          never earlier than the caller asked; with a bound, at the earlier of that and bound +
--          delay: both are no earlier than the call. A resent add (a lost reply) writes
--          nothing twice: it finds its own job (mode n: by identical record bytes) or the
--          completed, cancelled or dead record the job left. A replace keeps the attempts the
--          waiting job used and its last error.

--!include prelude.lua
--!include args.lua
--!include events.lua
--!include record.lua
--!include wheel.lua
--!include place.lua

if not string.match(ARGV[1] or '', '^[1-9]%d?%d?%d?%d?%d?$') then
  return bad_arg('N ' .. tostring(ARGV[1]) .. ' is not a whole number of jobs from 1 to 999999')
end
local n = tonumber(ARGV[1])
local FIRST = 5
if #ARGV < FIRST - 1 + n * 5 then
  return bad_arg('ARGV has ' .. #ARGV .. ' values; N = ' .. n .. ' jobs need ' .. (FIRST - 1 + n * 5))
end
local elapsed_text, bound_text = string.match(ARGV[2] or '', '^(%d+):(%d+)$')
if not elapsed_text then elapsed_text = ARGV[2] end
if not whole_ms(elapsed_text) then
  return bad_arg('elapsed ' .. tostring(ARGV[2]) .. ' is not whole ms >= 0, optionally followed by :epoch ms')
end
if bound_text and (#bound_text > 15 or tonumber(bound_text) < MIN_DUE_MS) then
  return bad_arg('elapsed ' .. ARGV[2] .. ': the call time after the colon is not an epoch ms in 2000..9999')
end
local cap_problem = check_events_cap(ARGV[3])
if cap_problem then return bad_arg(cap_problem) end

local K = {
  s = KEYS[1], p = KEYS[2], r = KEYS[3], gq = KEYS[4], gw = KEYS[5], gr = KEYS[6], gc = KEYS[7],
  j = KEYS[8], c = KEYS[9], x = KEYS[10], d = KEYS[11], w = KEYS[12], n = KEYS[13], ev = KEYS[14],
  a = KEYS[15], events = KEYS[14], events_cap = tonumber(ARGV[3]), gmax = tonumber(ARGV[4]) or 0,
}
local wheel_problem = wheel_keys(K, 16, FIRST + n * 5)
if wheel_problem then return bad_arg(wheel_problem) end
local now, now_us = now_ms_us()
-- The add() call, by the server's clock: TIME less the time from the call to the send, or the
-- client's bound when that is earlier (it also leaves out the time from the send to this script:
-- queued behind other calls). Either is no earlier than the call. A bound more than CALL_SLACK_MS
-- before the script's own figure means the client's clock reading is off: it is not used.
local CALL_SLACK_MS = 10000
local called = now - tonumber(elapsed_text)
if bound_text then
  local bound = tonumber(bound_text)
  if bound < called and bound >= called - CALL_SLACK_MS then called = bound end
end

-- Every job is checked before anything is written: one bad job refuses the whole call.
local ids, modes, dues, recs, heads = {}, {}, {}, {}, {}
for i = 1, n do
  local base = FIRST + (i - 1) * 5
  local id, mode, when, rec, class = ARGV[base], ARGV[base + 1], ARGV[base + 2], ARGV[base + 3], ARGV[base + 4]
  local problem = check_id(id)
  local kind, keep = string.sub(mode or '', 1, 1), string.sub(mode or '', 2)
  local due, h
  if not problem and keep ~= 'k' and keep ~= 'r' and keep ~= 'n' then
    problem = 'mode ' .. tostring(mode) .. ' is not d or a followed by k (keep), r (replace) or n (new id)'
  end
  if not problem then
    due, problem = check_when(kind, when, now)
    -- The delay counts from the add() call, which was `elapsed` ms before the send (HOT-PATH
    -- §6.3): a delay shorter than a hold-up before the send is due at call + delay, already past.
    if due and kind == 'd' then due = called + tonumber(when) end
  end
  if not problem then
    h, problem = rec_parse(rec)
    -- A producer never sends a claim block, even an empty one: the claims field is the worker's
    -- (a replace carries the old job's block over itself).
    if h and rec_has(h.fa, REC_A_CLAIM) then
      problem = 'record has the C flag (a claim block); a new job\'s record must not carry one'
    elseif h and (h.has_error or h.completed or h.cancelled or h.has_result) then
      problem = 'record is not a new job\'s: it has the E, D, Q or U flag'
    end
  end
  if not problem then problem = check_record_class(class, h, K.wi ~= nil) end
  if problem then return bad_arg('job ' .. i .. ' of ' .. n .. ': ' .. problem) end
  ids[i], modes[i], dues[i], recs[i], heads[i] = id, keep, due, rec, h
end
if K.wi then
  -- New buckets by the due times, and the buckets replaced jobs leave (wheel.lua finds those by id).
  local leaving = {}
  for i = 1, n do
    if modes[i] == 'r' then leaving[#leaving + 1] = ids[i] end
  end
  local missing = wheel_missing(K, dues, leaving, now)
  if missing then return missing end
end

-- One read for the whole batch tells which ids exist, and in which state (final records carry it).
local existing = redis.call('HMGET', K.j, unpack(ids))
local s_head = nil
if not K.wi then
  local head = redis.call('ZRANGE', K.s, 0, 0, 'WITHSCORES')
  s_head = head[2] and tonumber(head[2]) or nil
end

-- The state of existing job `id` (record `rec`, header h or nil when unreadable): code and time.
local function state_of(id, rec, h)
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

-- The due time of waiting job `id` (header h), read where its class puts it; -1 when not found.
local function waiting_due(id, h)
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
local function same_job(old, oh, new, nh)
  -- The G block's due time is the script's to write: the one stored is compared as sent.
  if nh.group and oh.group and #nh.group == #oh.group then
    new = rec_with_group_due(new, nh, oh.group_due)
  end
  return bit.band(oh.fa, 0x7E) == bit.band(nh.fa, 0x7E)
    and bit.band(oh.fb, bit.bnot(REC_B_ERROR)) == nh.fb
    and string.sub(old, oh.claim_end) == string.sub(new, nh.claim_end)
end

local out, hset, zs = {}, {}, {}
-- New grouped jobs' gq entries, and the groups they join (in order), deferred like zs.
local zg, touched, touched_order = {}, {}, {}
-- id -> due and record of the jobs this call wrote, for an id that comes twice in one batch.
local written, written_rec = {}, {}
local created, wake_at, bucket_end = 0, nil, nil
local function wake(at)
  if wake_at == nil or at < wake_at then wake_at = at end
end
-- What place_waiting returned: in the zset strategies true when the job became the earliest of
-- its set (wake at its due time); in the wheel the end of a new bucket, announced once at the end
-- if no bucket ends earlier (a job put straight into ready wakes blocked workers by itself).
local function placed(at, due)
  if K.wi then
    if at and (bucket_end == nil or at < bucket_end) then bucket_end = at end
  elseif at then
    wake(math.max(due, now))
  end
end
-- Write the deferred records and waiting entries now: a replace that follows reads them.
local function flush()
  call_chunked('HSET', K.j, hset, 2)
  call_chunked('ZADD', K.s, zs, 2)
  call_chunked('ZADD', K.gq, zg, 2)
  hset, zs, zg = {}, {}, {}
  -- Each group new jobs joined goes where its head says (one re-activation per group).
  for _, g in ipairs(touched_order) do
    local due = group_refresh(K, g, now)
    if due then wake(math.max(due, now)) end
  end
  touched, touched_order = {}, {}
end
for i = 1, n do
  local id, mode, due, rec, h = ids[i], modes[i], dues[i], recs[i], heads[i]
  local old = existing[i]
  if written[id] and mode == 'r' then
    -- Replaced within its own batch: what this call wrote is the job it replaces.
    flush()
    old = written_rec[id]
  end
  if written[id] and mode ~= 'r' then
    if mode == 'n' then
      out[#out + 1] = 'T'
      out[#out + 1] = -1
    else
      out[#out + 1] = 'k'
      out[#out + 1] = written[id]
    end
  elseif not old then
    if h.group then
      -- The G block holds the due time the job waits under in gq (its member there).
      rec = rec_with_group_due(rec, h, due)
      h.group_due = due
    end
    written_rec[id] = rec
    written[id] = due
    created = created + 1
    if h.prio == 0 and not h.group and not K.wi then
      -- What place_waiting does for the default class, deferred to one HSET and one ZADD.
      hset[#hset + 1] = id
      hset[#hset + 1] = rec
      zs[#zs + 1] = due
      zs[#zs + 1] = id
      if s_head == nil or due < s_head then wake(due) end
    elseif h.group and not K.wi then
      -- A new grouped job: its record goes with the batch's HSET and its gq entry with one ZADD;
      -- each group the batch touched is put back in its state once, at the end.
      hset[#hset + 1] = id
      hset[#hset + 1] = rec
      zg[#zg + 1] = 0
      zg[#zg + 1] = group_member(h.group, due, id)
      if not touched[h.group] then
        touched[h.group] = true
        touched_order[#touched_order + 1] = h.group
      end
    else
      redis.call('HSET', K.j, id, rec)
      placed(place_waiting(K, id, h, due, now), due)
    end
    out[#out + 1] = 'c'
    out[#out + 1] = due
    emit(K, 'added', id, 'runAt', due, 'at', now)
  else
    local oh = rec_parse(old)
    local code, time = state_of(id, old, oh)
    if code == 'k' and mode == 'n' then
      if oh and same_job(old, oh, rec, h) then
        time = waiting_due(id, oh)
      else
        code, time = 'T', -1
      end
    elseif code == 'k' and mode == 'r' and oh then
      local old_due = unplace_waiting(K, id, oh)
      if old_due then
        -- The attempts used and the last error stay with the job: a retry stays a retry.
        local new = rec
        if h.group then
          new = rec_with_group_due(new, h, due)
          h.group_due = due
        end
        if oh.claims > 0 then
          new = rec_claimed(rec, h, oh.attempts, oh.claims, oh.claimed_at, oh.run_due, oh.holder)
        end
        if oh.has_error then new = rec_with_error_flag(new, rec_parse(new), true) end
        redis.call('HSET', K.j, id, new)
        placed(place_waiting(K, id, h, due, now), due)
        written[id] = due
        written_rec[id] = new
        code, time = 'R', due
        emit(K, 'replaced', id, 'runAt', due, 'at', now)
      else
        time = -1
      end
    elseif code == 'k' then
      time = waiting_due(id, oh)
    end
    out[#out + 1] = code
    out[#out + 1] = time
  end
end
flush()
if created > 0 then redis.call('HINCRBY', K.n, 'added', created) end
if wake_at ~= nil then redis.call('PUBLISH', K.w, string.format('%.0f', wake_at)) end
if K.wi then wheel_announce(K, K.w, bucket_end) end
out[#out + 1] = now_us
return out
