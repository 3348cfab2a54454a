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
-- KEYS[17] lg  HASH id -> log lines (log.lua): an id added again over its completed job loses them
-- KEYS[18...] wheel strategy only: ready, wheel index, wheel count, then bucket lists (wheel.lua)
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
--          record that cannot be read, is not a new job's, carries the flow flag F (add-flow.lua's to write) or holds a field no worker can run (max
--          attempts 0, backoff kind not 1 or 2, timeout 0, version 0 or 1), a class that disagrees
--          with the header or a group that is not UTF-8. 'DELAYQ_BAD_ARG <reason>' for N, elapsed,
--          events cap, group concurrency (0..1000000) or a KEYS count other than 17 (20+ wheel). Wheel: 'DELAYQ_WRONG_BUCKET <start>,...' when a bucket
--          it needs was not passed (nothing written).
-- Cost: per call TIME, HMGET j, ZRANGE s 0 0, HSET j, ZADD s, HINCRBY n (and PUBLISH w when a
--          job moved the head earlier): no per-job command for new jobs of the default class;
--          O(log n) per job. Each step's own cost is in its include's header.
-- Guarantee: every job is checked before anything is written, and the batch is written in one
--          atomic step. A delayed job is due at now - elapsed + delay by the server's clock, so
--          never earlier than the caller asked; with a bound, at the earlier of that and bound +
--          delay: both are no earlier than the call. A resent add (a lost reply) writes
--          nothing twice: it finds its own job (mode n: by identical record bytes) or the
--          completed, cancelled or dead record the job left. A replace keeps the attempts the
--          waiting job used and its last error.
--
-- Steps (one include each, in src/scripts/includes/; each header gives its inputs, outputs, cost):
--   1. add-call.lua      the call's arguments, KEYS (ADD_KEYS: their one order) and the clock
--   2. add-jobs.lua      every job read and checked: nothing is written before this returns
--   3. add-existing.lua  ids that exist, in Redis or earlier in the call: keep, new, replace
--   4. add-place.lua     new jobs placed by class: default and groups per batch, others one by one
--   5. add-wake.lua      the added counter and the wake the call owes
-- They share no state but what they are passed: `call` (step 1, read only), `jobs` (step 2) and
-- `done` (below: what steps 3 to 5 did, per job and for the call).
--
-- How to change this script: correctness is decided by test/hotpath/add*.test.ts,
-- test/integration/script-inputs.test.ts (every refusal before the first write),
-- test/integration/{add-clock,protocol,protocol-holes,python-producer,foreign-producer}.test.ts,
-- test/model/ (random batches, duplicate ids and replaces included, against a model) and
-- test/hotpath/add-keys.test.ts (the KEYS order); cost by `npm run bench:redis-instructions --
-- --phase=add --jobs=20000` (instructions per job, steady to ~0.5 % between runs): a change may
-- not raise it by more than 1 %. A Lua function call per job is ~450 of its ~30,000.

--!include prelude.lua
--!include args.lua
--!include events.lua
--!include record.lua
--!include wheel.lua
--!include place.lua
--!include add-wake.lua
--!include add-call.lua
--!include add-jobs.lua
--!include add-existing.lua
--!include add-place.lua

local call, refused = add_call()
if refused then return refused end
local jobs
jobs, refused = add_jobs(call)
if refused then return refused end

-- Every job is checked; from here on the batch is written.
local K, n = call.K, call.n
-- One read for the whole batch tells which ids exist, and in which state (final records carry it).
local existing = redis.call('HMGET', K.j, unpack(jobs.ids))
-- The earliest job of the default class: a new one earlier than it wakes sleeping workers.
local s_head = nil
if not K.wi then
  local head = redis.call('ZRANGE', K.s, 0, 0, 'WITHSCORES')
  s_head = head[2] and tonumber(head[2]) or nil
end
-- What the call did: per job its reply code and time; per id written, the job that wrote it (an
-- id can come twice in one call); jobs created; the wake owed (add-wake.lua).
local done = { codes = {}, times = {}, written = {}, created = 0, wake_at = nil, bucket_end = nil }
-- Steps 3 and 4 in turns: a job that replaces one created earlier in this call sends step 3
-- back to step 4 first, so it finds that job written (one turn, but for such calls).
local first = 1
repeat
  local fresh, count, next_first = add_dedupe(call, jobs, existing, first, done)
  add_place(call, jobs, fresh, count, s_head, done)
  first = next_first
until first > n
add_announce(call, done)

-- Per-job form: code and time per job. Packed: the codes as one string, then the times: one
-- bulk string per call instead of one per job, for Redis to write and the client to read.
local codes, times = done.codes, done.times
local out
if call.packed then
  out = { table.concat(codes) }
  for i = 1, n do out[i + 1] = times[i] end
else
  out = {}
  for i = 1, n do
    out[2 * i - 1] = codes[i]
    out[2 * i] = times[i]
  end
end
out[#out + 1] = call.now_us
return out
