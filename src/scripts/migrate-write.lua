-- migrate-write: convert one chunk of a layout-1 partition to layout 2 for `delayq migrate`
-- (docs/ARCHITECTURE.md §10): per job, compare-and-set against what migrate-read.lua returned,
-- write its record and place it, then delete its layout-1 entries.
--
-- KEYS[1..10] layout 1 as in migrate-read.lua: schedule, jobs, meta, active, leases, dead, errors,
--         completed, done, cancelled (`x`, shared with layout 2)
-- KEYS[11] records  HASH id -> record (`j`)
-- KEYS[12] waiting  ZSET id -> due ms (`s`)
-- KEYS[13] leases   ZSET lease member -> deadline ms (`a`)
-- KEYS[14] dead     ZSET id -> died at ms (`d`)
-- KEYS[15] completed ZSET id -> completed at ms (`c`)
-- KEYS[16] errors   HASH id -> last error JSON (`e`)
-- ARGV[1] N, then 8 per job:
--         id;
--         meta, lease: the layout-1 meta and lease strings migrate-read returned ('' = none): the
--           job is converted only if both are still exactly these;
--         record: the layout-2 record ('' = none);
--         target: where the job goes: s (waiting), a (running), d (dead), c (completed), x
--           (cancelled; `x` holds it already), or '' (nowhere: only its old entries go);
--         score: its due time, lease deadline, died, completed or cancelled at (ms);
--         member: with target a, the lease member "<claims>.<claimedAt>|<id>"; else '';
--         error: its last error JSON for `e` ('' = none)
-- Returns: per job 'ok', or 'changed' (nothing written for it: a layout-1 client touched it since
--          the read; the caller reads it again). Error 'DELAYQ_BAD_ARG <reason>' (nothing written,
--          for any job of the call) for KEYS other than these 16 or of another type than the one
--          above, an N that is not 1..100000 or does not match the ARGV count, or a job whose id is
--          not one add.lua takes, whose record cannot be read, whose target is not one above, whose
--          score is not a whole ms, whose member is not a lease member of its id (target a) or not
--          '' (other targets), or whose error is neither '' nor a JSON object.
-- Guarantee: each job is converted whole or not at all, and only from the state it was read in.
--          With targets c and x, a record already in `j` is kept (a kept completed job is in
--          both `completed` and `done`; the first conversion wins).
-- Cost: O(N × log n).

--!include args.lua
--!include record.lua

local problem = check_key_count(16, false) or check_whole(ARGV[1], 'ARGV[1] N', 1, 100000)
if problem then return bad_arg(problem) end
local n = tonumber(ARGV[1])
if #ARGV ~= 1 + n * 8 then
  return bad_arg('ARGV has ' .. #ARGV .. ' values; N = ' .. n .. ' jobs need 1 + 8 per job')
end
local targets = { s = true, a = true, d = true, c = true, x = true, [''] = true }
-- Every job checked before the first is written (docs/DESIGN.md invariant 10): a bad job found
-- in the loop once returned its error after the jobs before it were converted.
for i = 0, n - 1 do
  local b = 2 + i * 8
  local of = ' (job ' .. (i + 1) .. ' of ' .. n .. ')'
  local id, record, target, score, member, err = ARGV[b], ARGV[b + 3], ARGV[b + 4], ARGV[b + 5], ARGV[b + 6], ARGV[b + 7]
  problem = check_id(id, 'ARGV[' .. b .. '] id' .. of)
  if not problem and record ~= '' then
    local h, unreadable = rec_parse(record)
    if not h then problem = 'ARGV[' .. (b + 3) .. '] record' .. of .. ': ' .. unreadable end
  end
  if not problem and not targets[target] then
    problem = 'ARGV[' .. (b + 4) .. '] target' .. of .. ' ' .. target .. ' is not s, a, d, c, x or \'\''
  end
  if not problem and target ~= '' then
    problem = check_whole(score, 'ARGV[' .. (b + 5) .. '] score' .. of, 0, MAX_DUE_MS)
  end
  if not problem and target == 'a' then
    problem = check_member(member, 'ARGV[' .. (b + 6) .. '] member' .. of)
    if not problem and member_id(member) ~= id then
      problem = 'ARGV[' .. (b + 6) .. '] member' .. of .. ' ' .. member .. ' is not a lease member of the id ' .. id
    end
  elseif not problem and member ~= '' then
    problem = 'ARGV[' .. (b + 6) .. '] member' .. of .. ' must be \'\' for target ' .. target
  end
  if not problem and err ~= '' then
    local ok, decoded = pcall(cjson.decode, err)
    if not ok or type(decoded) ~= 'table' or decoded[1] ~= nil then problem = 'ARGV[' .. (b + 7) .. '] error' .. of .. ' is not \'\' or a JSON object' end
  end
  if problem then return bad_arg(problem) end
end
-- Layout 1's schedule, jobs, meta, active, leases, dead, errors, completed, done, then x, j, s, a, d, c, e.
problem = check_key_types('zhhzhzhzzzhzzzzh', false)
if problem then return bad_arg(problem) end
local old = {
  schedule = KEYS[1], jobs = KEYS[2], meta = KEYS[3], active = KEYS[4], leases = KEYS[5],
  dead = KEYS[6], errors = KEYS[7], completed = KEYS[8], done = KEYS[9],
}
local K = { x = KEYS[10], j = KEYS[11], s = KEYS[12], a = KEYS[13], d = KEYS[14], c = KEYS[15], e = KEYS[16] }

local out = {}
for i = 0, n - 1 do
  local b = 2 + i * 8
  local id, meta, lease, record = ARGV[b], ARGV[b + 1], ARGV[b + 2], ARGV[b + 3]
  local target, score, member, err = ARGV[b + 4], ARGV[b + 5], ARGV[b + 6], ARGV[b + 7]
  local now_meta = redis.call('HGET', old.meta, id) or ''
  local now_lease = redis.call('HGET', old.leases, id) or ''
  if now_meta ~= meta or now_lease ~= lease then
    out[#out + 1] = 'changed'
  else
    local keep = (target == 'c' or target == 'x') and redis.call('HEXISTS', K.j, id) == 1
    if not keep then
      if record ~= '' then redis.call('HSET', K.j, id, record) end
      if target == 'a' then
        redis.call('ZADD', K.a, score, member)
      elseif target ~= '' then
        redis.call('ZADD', K[target], score, id)
      end
      -- Layout 1 let an id be added again after its cancel and kept it in `x`; in layout 2 a job
      -- is in one state only.
      if target ~= 'x' and target ~= '' then redis.call('ZREM', K.x, id) end
      if err ~= '' then redis.call('HSET', K.e, id, err) end
    end
    for _, key in ipairs({ old.schedule, old.active, old.dead, old.completed, old.done }) do
      redis.call('ZREM', key, id)
    end
    redis.call('HDEL', old.jobs, id)
    redis.call('HDEL', old.meta, id)
    redis.call('HDEL', old.leases, id)
    redis.call('HDEL', old.errors, id)
    out[#out + 1] = 'ok'
  end
end
return out
