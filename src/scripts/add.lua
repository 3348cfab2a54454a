-- add: accept a batch of jobs, each a ready-made record (docs/ARCHITECTURE.md §4.1).
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
-- KEYS[16] gn  ZSET group -> its waiting jobs (groups.lua keeps it with gq)
-- KEYS[17...] wheel strategy only: ready, wheel index, wheel count, then bucket lists (wheel.lua)
-- ARGV[1] N (1..999999), ARGV[2] elapsed: whole ms from the add() call to the send (client's
--         monotonic clock, rounded down), optionally followed by ':' and the most the server's
--         clock read at the call (epoch ms, rounded down; the client bounds it from earlier
--         replies' TIME, src/server-time-bound.ts), ARGV[3] events cap (negative: failures only, 0: off,
--         events.lua), ARGV[4] group concurrency (the queue's recorded one; 0: unknown, so a
--         group with waiting jobs is put in turn and the claim checks its slots), then 5 per job:
--         id; mode: 'd' (when = delay ms from the add() call) or 'a' (when = epoch ms), followed by
--         'k' (keep an existing job), 'r' (replace a waiting one, or add again over a completed
--         one) or 'n' (a generated id: an
--         existing one is a collision); when; record (header + payload, src/record/); class: ''
--         (default), 'p<prio>' (must repeat the header's priority) or 'g<group>' (must repeat the
--         header's group; the script writes the G block's due time). Wheel strategy only, after them: granularity ms and the start of
--         each bucket list in KEYS.
--         Packed form (what delayq's own producers send): ARGV[1] is 'P' followed by N, and ARGV[5]
--         holds all N jobs, each as: id length uint16 BE, id, mode (2 bytes, as above), when uint48
--         BE, record length uint32 BE, record; no class (the script reads it from the header). The
--         wheel's values follow at ARGV[6]. Every ARGV value costs Redis an argument object and a
--         Lua string, and the client its RESP framing: this form has one for all the jobs, not five
--         per job. The checks are the same.
-- Returns: { code_1, time_1, ..., now µs }: per job a code and a time, then the script's TIME in
--          epoch µs (producers bound the server's clock with it; the wheel guesses buckets by it).
--          Packed form: { codes, time_1, ..., time_N, now µs }, codes being the N code letters in
--          one string.
--          c created (time = due), k exists and kept (its due time, -1 when not waiting), R
--          replaced (new due), A running (lease deadline), C completed (completed at; a replace
--          of a completed job creates it again instead: c), X cancelled
--          (cancelled at), D dead (died at), T the generated id is taken (-1: nothing written; the
--          client draws a new id and adds that job again).
--          Error 'DELAYQ_BAD_ARG job <i> of <N>: <reason>' (nothing written) when an argument is
--          malformed: id (empty, over 1536 bytes, a control character, not UTF-8), mode, when, a
--          record that cannot be read, is not a new job's or holds a field no worker can run (max
--          attempts 0, backoff kind not 1 or 2, timeout 0, version 0 or 1), a class that disagrees
--          with the header or a group that is not UTF-8. 'DELAYQ_BAD_ARG <reason>' for N, elapsed,
--          events cap, group concurrency (0..1000000) or a KEYS count other than 16 (19+ wheel). Wheel: 'DELAYQ_WRONG_BUCKET <start>,...' when a bucket
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

local packed_text, n_text = string.match(ARGV[1] or '', '^(P?)([1-9]%d?%d?%d?%d?%d?)$')
if not n_text then
  return bad_arg('N ' .. tostring(ARGV[1]) .. ' is not a whole number of jobs from 1 to 999999, optionally after P (packed)')
end
local n = tonumber(n_text)
local packed = packed_text == 'P'
local FIRST = 5
-- ARGV values the jobs take: 5 each, or the one packed value.
local job_args = packed and 1 or n * 5
if #ARGV < FIRST - 1 + job_args then
  return bad_arg('ARGV has ' .. #ARGV .. ' values; N = ' .. ARGV[1] .. ' jobs need ' .. (FIRST - 1 + job_args))
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
local gmax_problem = check_group_concurrency(ARGV[4], 'group concurrency')
if gmax_problem then return bad_arg(gmax_problem) end
local key_problem = check_key_count(16, true)
if key_problem then return bad_arg(key_problem) end

local K = {
  s = KEYS[1], p = KEYS[2], r = KEYS[3], gq = KEYS[4], gw = KEYS[5], gr = KEYS[6], gc = KEYS[7],
  j = KEYS[8], c = KEYS[9], x = KEYS[10], d = KEYS[11], w = KEYS[12], n = KEYS[13], ev = KEYS[14],
  a = KEYS[15], gn = KEYS[16], events = KEYS[14], events_cap = tonumber(ARGV[3]), gmax = tonumber(ARGV[4]),
}
local wheel_problem = wheel_keys(K, 17, FIRST + job_args)
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

-- Each job's id, mode, when and record (and class, in the per-job form), read in one pass first:
-- the packed ones under one pcall (a pcall per job cost more than the rest of reading it). One
-- struct.unpack reads a packed job ('c0': a string as long as the number before it); a length
-- past the value's end makes it raise, which is refused as such, never read short.
local PACKED_JOB = '>Hc0c2I6I4c0'
local ids, modes, whens, recs, classes = {}, {}, {}, {}, {}
if packed then
  local blob, at, count = ARGV[FIRST], 1, 0
  local ok = pcall(function()
    for i = 1, n do
      if at > #blob then return end
      ids[i], modes[i], whens[i], recs[i], at = struct.unpack(PACKED_JOB, blob, at)
      count = i
    end
  end)
  local problem
  if not ok then
    problem = 'job ' .. (count + 1) .. ' of ' .. n .. ': the packed value ends inside this job'
  elseif count < n then
    problem = 'job ' .. (count + 1) .. ' of ' .. n .. ': the packed value ends before job ' .. (count + 1)
  elseif at ~= #blob + 1 then
    problem = 'the packed value has ' .. (#blob + 1 - at) .. ' bytes after its ' .. n .. ' jobs'
  end
  if problem then return bad_arg(problem) end
else
  for i = 1, n do
    local base = FIRST + (i - 1) * 5
    ids[i], modes[i], whens[i], recs[i], classes[i] = ARGV[base], ARGV[base + 1], ARGV[base + 2], ARGV[base + 3], ARGV[base + 4]
  end
end
-- The first job whose id holds a control character: searched in all the ids at once.
local with_control = first_id_with_control(ids, n)
-- And the first that is not UTF-8: a worker could never ack it (issue 32).
local not_utf8 = first_id_not_utf8(ids, n)

-- A mode's two parts: when-kind and what to do with an existing id. A table lookup, where two
-- string.sub calls per job cost more.
local MODE_KIND = { dk = 'd', dr = 'd', dn = 'd', ak = 'a', ar = 'a', an = 'a' }
local MODE_KEEP = { dk = 'k', dr = 'r', dn = 'n', ak = 'k', ar = 'r', an = 'n' }

-- Every job is checked before anything is written: one bad job refuses the whole call. What the
-- loop below needs of job i: ids[i], modes[i] (k, r or n), dues[i], recs[i], heads[i].
local dues, heads = {}, {}
for i = 1, n do
  local id, mode, when, rec = ids[i], modes[i], whens[i], recs[i]
  local problem = check_id_size(id)
  if not problem and i == with_control then problem = 'id contains a control character' end
  if not problem and i == not_utf8 then problem = 'id ' .. utf8_problem(id) end
  local kind, keep = MODE_KIND[mode], MODE_KEEP[mode]
  local due, h
  if not problem and not keep then
    problem = 'mode ' .. tostring(mode) .. ' is not d or a followed by k (keep), r (replace) or n (new id)'
  end
  if not problem then
    -- A packed when is a uint48: whole and at most 15 digits already, so only its range is checked.
    if packed then due, problem = check_when_ms(kind, when, now) else due, problem = check_when(kind, when, now) end
    -- The delay counts from the add() call, which was `elapsed` ms before the send (docs/ARCHITECTURE.md
    -- §6.3): a delay shorter than a hold-up before the send is due at call + delay, already past.
    if due and kind == 'd' then due = called + (packed and when or tonumber(when)) end
  end
  if not problem then
    -- Jobs of default options share one parsed header (rec_parse): a new job's, nothing to check.
    h, problem = rec_parse(rec)
    -- A producer never sends a claim block, even an empty one: the claims field is the worker's
    -- (a replace carries the old job's block over itself).
    if h == REC_DEFAULT_NEW then
      -- The default class, checked as such below.
    elseif h and rec_has(h.fa, REC_A_CLAIM) then
      problem = 'record has the C flag (a claim block); a new job\'s record must not carry one'
    elseif h and (h.has_error or h.completed or h.cancelled or h.has_result) then
      problem = 'record is not a new job\'s: it has the E, D, Q or U flag'
    elseif h then
      problem = check_new_header(rec, h)
    end
  end
  -- The packed form sends no class: it is the header's, so only the checks of the class itself
  -- (a group's characters, priority or group with the wheel) remain, and none for the default.
  if not problem and not packed then
    problem = check_record_class(classes[i], h, K.wi ~= nil)
  elseif not problem and h ~= REC_DEFAULT_NEW and (h.prio ~= 0 or h.group) then
    problem = check_record_class(record_class(h), h, K.wi ~= nil)
  end
  if problem then return bad_arg('job ' .. i .. ' of ' .. n .. ': ' .. problem) end
  modes[i], dues[i], heads[i] = keep, due, h
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

-- Whether `rec` is a completed record (a replace adds its id again as a new job).
local function is_completed(rec)
  local h = rec_parse(rec)
  return h ~= nil and h.completed
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

-- Per job, the reply's code and time (the reply's shape depends on the form: at the end).
local codes, times, hset, zs, hset_n, zs_n = {}, {}, {}, {}, 0, 0
-- New grouped jobs' gq entries, and the groups they join (in order, with how many), deferred like zs.
local zg, touched, touched_order = {}, {}, {}
-- id -> the index of the job this call wrote for it (its due time and record are in dues and
-- recs), for an id that comes twice in one batch.
local written = {}
-- Whether each new job gets an `added` event: asked once for the batch.
local emit_added = emits(K, 'added')
-- s's scores as text (ms_text, prelude.lua: Redis 7.0 would format a Lua number with '%.17g'),
-- and the jobs of one call often share a due time (one delay for all), so the text of the
-- previous one is kept.
local last_due, last_due_text = nil, nil
local function due_text(due)
  if due ~= last_due then last_due, last_due_text = due, ms_text(due) end
  return last_due_text
end
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
  hset, zs, zg, hset_n, zs_n = {}, {}, {}, 0, 0
  -- Each group new jobs joined counts them and goes where its head says (once per group).
  for _, g in ipairs(touched_order) do
    group_count(K, g, touched[g])
    local due = group_refresh(K, g, now)
    if due then wake(math.max(due, now)) end
  end
  touched, touched_order = {}, {}
end
for i = 1, n do
  local id, mode, due, rec, h = ids[i], modes[i], dues[i], recs[i], heads[i]
  local old, earlier = existing[i], written[id]
  if earlier and mode == 'r' then
    -- Replaced within its own batch: what this call wrote is the job it replaces.
    flush()
    old = recs[earlier]
  end
  if earlier and mode ~= 'r' then
    if mode == 'n' then
      codes[i], times[i] = 'T', -1
    else
      codes[i], times[i] = 'k', dues[earlier]
    end
  elseif not old or (mode == 'r' and is_completed(old)) then
    if old then
      -- A replace of a job that completed (its record remembered while kept): the edit is a new
      -- job, as if the id were free; a keep still answers 'C'.
      redis.call('ZREM', K.c, id)
    end
    if h.group then
      -- The G block holds the due time the job waits under in gq (its member there).
      rec = rec_with_group_due(rec, h, due)
      h.group_due = due
      recs[i] = rec
    end
    written[id] = i
    created = created + 1
    if not K.wi and (h == REC_DEFAULT_NEW or h.prio == 0 and not h.group) then
      -- What place_waiting does for the default class, deferred to one HSET and one ZADD. The
      -- lists' lengths are counted: `#` is a search in Lua 5.1.
      hset[hset_n + 1], hset[hset_n + 2], hset_n = id, rec, hset_n + 2
      zs[zs_n + 1], zs[zs_n + 2], zs_n = due_text(due), id, zs_n + 2
      if s_head == nil or due < s_head then wake(due) end
    elseif h.group and not K.wi then
      -- A new grouped job: its record goes with the batch's HSET and its gq entry with one ZADD;
      -- each group the batch touched is put back in its state once, at the end.
      hset[hset_n + 1], hset[hset_n + 2], hset_n = id, rec, hset_n + 2
      zg[#zg + 1] = 0
      zg[#zg + 1] = group_member(h.group, due, id)
      if not touched[h.group] then
        touched[h.group] = 1
        touched_order[#touched_order + 1] = h.group
      else
        touched[h.group] = touched[h.group] + 1
      end
    else
      redis.call('HSET', K.j, id, rec)
      placed(place_waiting(K, id, h, due, now), due)
    end
    codes[i], times[i] = 'c', due
    if emit_added then emit(K, 'added', id, 'runAt', due, 'at', now) end
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
        written[id] = i
        recs[i] = new
        code, time = 'R', due
        emit(K, 'replaced', id, 'runAt', due, 'at', now)
      else
        time = -1
      end
    elseif code == 'k' then
      time = waiting_due(id, oh)
    end
    codes[i], times[i] = code, time
  end
end
flush()
if created > 0 then redis.call('HINCRBY', K.n, 'added', created) end
if wake_at ~= nil then redis.call('PUBLISH', K.w, ms_text(wake_at)) end
if K.wi then wheel_announce(K, K.w, bucket_end) end
-- Per-job form: code and time per job. Packed: the codes as one string, then the times: one
-- bulk string per call instead of one per job, for Redis to write and the client to read.
local out
if packed then
  out = { table.concat(codes) }
  for i = 1, n do out[i + 1] = times[i] end
else
  out = {}
  for i = 1, n do
    out[2 * i - 1] = codes[i]
    out[2 * i] = times[i]
  end
end
out[#out + 1] = now_us
return out
