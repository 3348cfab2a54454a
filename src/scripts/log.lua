-- log: add one line to a running job's log, for its lease holder only (job.log, issue 33;
-- docs/ARCHITECTURE.md §4.13).
--
-- KEYS[1] a   ZSET lease member "<claims>.<claimed at>|<id>[\0<group>]" -> deadline ms
-- KEYS[2] lg  HASH id -> the job's log lines, packed: per line, in the order written,
--             claims uint16 · attempt uint16 · claimed at uint48 · written at uint48 (the server's
--             TIME) · length uint16 · the line's UTF-8 bytes (the run is told by its claims and
--             claimed at, the lease member's token)
-- KEYS[3] x   ZSET id -> cancelled at ms (only read: the reason a cancelled job's holder gets)
-- ARGV[1] lease member, ARGV[2] attempt (1..65535: the attempt number the handler sees),
-- ARGV[3] the line (valid UTF-8, no control character (C0, DEL, C1) but tab, 1 byte up to the
-- max bytes per line), ARGV[4] max bytes per line, ARGV[5] max lines per run, ARGV[6] max lines
-- per job (more than the max lines per run; each cap 1..65535)
-- Returns: the number of lines this run now has (1 up to the max lines per run). Errors (nothing
--          written): 'DELAYQ_LEASE_LOST <why>' (cancelled, expired, not held); 'DELAYQ_LOG_FULL
--          <max>' when this run has its max lines already; 'DELAYQ_BAD_ARG <reason>' for a
--          malformed argument, a line over the max bytes, with a control character or not
--          UTF-8, KEYS other than these 3 or ARGV other than these 6 values.
-- Guarantee (fencing): only the holder of a valid lease writes, so a holder that lost its lease
--          cannot add to the next attempt's lines. The lines are kept while the job's record is:
--          no script that ends an attempt deletes them; trim.lua and dead-remove.lua delete them
--          with the record. A job keeps its newest ARGV[6] lines: a later run's lines push out
--          the oldest runs' first. Lines of an earlier job of the same id (a completed id added
--          again) are dropped here when their run tells them (claims above this lease's, or the
--          same claims at another claimed-at time); lines of its runs with lower claims are not
--          (docs/ARCHITECTURE.md §4.13). Cost: O(the job's lines), at most ARGV[6].

--!include prelude.lua
--!include record.lua
--!include lease-check.lua
--!include args.lua

local ENTRY_HEAD = '>HHI6I6H'
local ENTRY_HEAD_LEN = 18

local key_problem = check_key_count(3, false)
if key_problem then return bad_arg(key_problem) end
local K = { a = KEYS[1], lg = KEYS[2], x = KEYS[3] }
-- Checks in the order of ARGV, each naming its argument, before anything is read or written.
local member, line = ARGV[1], ARGV[3]
local member_problem = check_member(member, 'ARGV[1] lease member')
if member_problem then return bad_arg(member_problem) end
local claims, claimed_at = string.match(member, '^(%d+)%.(%d+)|')
claims, claimed_at = tonumber(claims), tonumber(claimed_at)
if claims > 65535 or claimed_at > 281474976710655 then
  return bad_arg('ARGV[1] lease member ' .. member .. ' has claims over 65535 or a claimed-at time past 2^48')
end
local function limit_problem(i, what)
  local v = ARGV[i]
  if not whole_ms(v) or #v > 5 or tonumber(v) < 1 or tonumber(v) > 65535 then
    return 'ARGV[' .. i .. '] ' .. what .. ' ' .. tostring(v) .. ' is not a whole number 1..65535'
  end
  return nil
end
local problem = limit_problem(2, 'attempt')
if problem then return bad_arg(problem) end
if type(line) ~= 'string' or #line == 0 then return bad_arg('ARGV[3] log line is missing or empty') end
-- C0 controls and DEL, and (as UTF-8: C2 80 to C2 9F) the C1 controls.
if string.find(line, '[%z\1-\8\10-\31\127]') or string.find(line, '\194[\128-\159]') then
  return bad_arg('ARGV[3] log line contains a control character (one line of text; tab is allowed)')
end
local utf8_bad = utf8_problem(line)
if utf8_bad then return bad_arg('ARGV[3] log line ' .. utf8_bad) end
problem = limit_problem(4, 'max bytes per line') or limit_problem(5, 'max lines per run')
  or limit_problem(6, 'max lines per job')
problem = problem or check_arg_count(6, 'log')
if problem then return bad_arg(problem) end
local attempt, max_bytes = tonumber(ARGV[2]), tonumber(ARGV[4])
local max_run, max_job = tonumber(ARGV[5]), tonumber(ARGV[6])
if max_job <= max_run then
  return bad_arg('ARGV[6] max lines per job ' .. max_job .. ' must be more than ARGV[5] max lines per run ' .. max_run)
end
-- Callers in other languages have no TypeScript check in front of them: the cap holds here too.
if #line > max_bytes then
  return bad_arg('ARGV[3] log line is ' .. #line .. ' bytes; it must be 1 to ' .. max_bytes)
end

local id = member_id(member)
local now = now_ms()
local lost = lease_lost(K, member, id, now)
if lost then return redis.error_reply('DELAYQ_LEASE_LOST ' .. lost) end

-- The lines kept: where each starts and ends in `old`. A tail that does not parse (written by
-- hand) is dropped rather than kept unreadable.
local old = redis.call('HGET', K.lg, id) or ''
local starts, stops, mine = {}, {}, 0
local at, len = 1, #old
while at + ENTRY_HEAD_LEN - 1 <= len do
  local c, _, c_at, _, n = struct.unpack(ENTRY_HEAD, old, at)
  local stop = at + ENTRY_HEAD_LEN + n - 1
  if stop > len then break end
  if c > claims or (c == claims and c_at ~= claimed_at) then
    -- A run this job has not had: an earlier job of this id wrote these lines. None of them stays.
    starts, stops, mine = {}, {}, 0
    break
  end
  starts[#starts + 1], stops[#starts + 1] = at, stop
  if c == claims then mine = mine + 1 end
  at = stop + 1
end
if mine >= max_run then return redis.error_reply('DELAYQ_LOG_FULL ' .. max_run) end

-- The newest max_job - 1 lines stay, then this one. This run has fewer than max_run < max_job
-- lines, so only earlier runs' lines are pushed out.
local parts = {}
for i = math.max(1, #starts - max_job + 2), #starts do
  parts[#parts + 1] = string.sub(old, starts[i], stops[i])
end
parts[#parts + 1] = struct.pack(ENTRY_HEAD, claims, attempt, claimed_at, now, #line) .. line
redis.call('HSET', K.lg, id, table.concat(parts))
return mine + 1
