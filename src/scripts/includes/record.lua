-- The layout-2 job record (docs/ARCHITECTURE.md §3.2): read and rewrite its header with
-- `struct`, never cjson. Only the header is touched; the payload bytes after it are never looked at.
-- Byte 1 format (1), byte 2 flags A, byte 3 flags B when A has 0x80, then the optional fields in
-- flag order: C claim block (20), M max attempts (2), B backoff (9), P priority (2, signed),
-- G group (1 + n + 6), T timeout (4), K created at (6), V version (2), R traceparent (1 + n);
-- flags B 0x40 (F, a flow's job) has no field.
-- The TypeScript twin is src/record/ (encode.ts, decode.ts); test/vectors/records/ pins both.

local REC_FORMAT = 1
-- Claim block: attempts made, claims, claimed at ms, due of this run ms, holder number.
local REC_CLAIM_BLOCK = '>HHI6I6I4'
local REC_CLAIM_LEN = 20
-- Format byte, flags A (B not present), then the claim block.
local REC_CLAIMED_HEAD = '>BBHHI6I6I4'
-- Final records: format 1, flags A 0x80 (flags B follows), B 0x08 completed / 0x10 cancelled;
-- 0x28 = completed with the result after the header. These are the final records of a job never
-- claimed, or of a worker of delayq 0.2 (no claim block kept); rec_final keeps C and M.
local REC_COMPLETED = '\1\128\8'
local REC_COMPLETED_RESULT_HEAD = '\1\128\40'

local REC_A_CLAIM, REC_A_MAX, REC_A_BACKOFF, REC_A_PRIO = 0x01, 0x02, 0x04, 0x08
local REC_A_GROUP, REC_A_TIMEOUT, REC_A_CREATED, REC_A_MORE = 0x10, 0x20, 0x40, 0x80
local REC_B_VERSION, REC_B_TRACE, REC_B_ERROR, REC_B_COMPLETED = 0x01, 0x02, 0x04, 0x08
-- 0x40 is F, a flow's job (flow.lua): a flag with no field, nothing here reads it.
local REC_B_CANCELLED, REC_B_RESULT, REC_B_RESERVED = 0x10, 0x20, 0x80

local function rec_has(flags, bitmask)
  return bit.band(flags, bitmask) ~= 0
end

-- Parse the header of `rec`. Returns a table h, or nil and the reason the record cannot be read
-- (unknown format, reserved bits, truncated): such a job is buried with that reason, never guessed.
-- h: fa, fb (flag bytes), attempts, claims, claimed_at, run_due, holder (0 before the first claim),
-- max (default 3), prio (default 0), group (nil) and group_due, timeout (nil), has_error,
-- completed, cancelled, has_result, body (1-based offset of the payload or result), and for the
-- rewriting helpers below: claim_at (offset where the claim block is or would go), claim_end
-- (offset after it), group_due_at (offset of G's due time).
-- Why a record is cut short: `what` was announced at byte `at` of a record of `len` bytes.
local function rec_short(what, at, len)
  return nil, 'record is truncated: ' .. what .. ' announced at byte ' .. (at - 1) .. ' of ' .. len
end

-- Every job a claim takes is parsed, so this reads into locals and builds h with one table
-- constructor (no closure, no fields added later): about half the cost of filling h field by field.
-- Callers use rec_parse below, which shares one h among records of default options.
local function rec_parse_full(rec)
  if type(rec) ~= 'string' then return nil, 'record is truncated (under 2 bytes)' end
  local len = #rec
  if len < 2 then return nil, 'record is truncated (under 2 bytes)' end
  local format, fa = string.byte(rec, 1, 2)
  if format ~= REC_FORMAT then return nil, 'record format byte ' .. format .. ' is unknown' end
  local at, fb = 3, 0
  if fa >= REC_A_MORE then
    if len < 3 then return rec_short('flags B', at, len) end
    fb = string.byte(rec, 3)
    at = 4
    if bit.band(fb, REC_B_RESERVED) ~= 0 then return nil, 'record flags B has reserved bits set (a newer format?)' end
  end
  local claim_at = at
  local attempts, claims, claimed_at, run_due, holder = 0, 0, 0, 0, 0
  local max, prio, group, group_due_at, group_due, timeout = 3, 0, nil, nil, nil, nil
  if bit.band(fa, REC_A_CLAIM) ~= 0 then
    if len < at + REC_CLAIM_LEN - 1 then return rec_short('the claim block', at, len) end
    attempts, claims, claimed_at, run_due, holder = struct.unpack(REC_CLAIM_BLOCK, rec, at)
    at = at + REC_CLAIM_LEN
  end
  local claim_end = at
  -- Past the claim block: the optional fields, only when a flag other than C is set.
  if bit.band(fa, 0x7E) ~= 0 or fb ~= 0 then
    if bit.band(fa, REC_A_MAX) ~= 0 then
      if len < at + 1 then return rec_short('max attempts', at, len) end
      max = struct.unpack('>H', rec, at)
      at = at + 2
    end
    if bit.band(fa, REC_A_BACKOFF) ~= 0 then
      if len < at + 8 then return rec_short('the backoff', at, len) end
      at = at + 9
    end
    if bit.band(fa, REC_A_PRIO) ~= 0 then
      if len < at + 1 then return rec_short('the priority', at, len) end
      prio = struct.unpack('>h', rec, at)
      at = at + 2
    end
    if bit.band(fa, REC_A_GROUP) ~= 0 then
      if len < at then return rec_short('the group length', at, len) end
      local glen = string.byte(rec, at)
      if glen == 0 then return nil, 'record group length is 0' end
      if len < at + glen + 6 then return rec_short('the group', at, len) end
      group = string.sub(rec, at + 1, at + glen)
      group_due_at = at + 1 + glen
      group_due = struct.unpack('>I6', rec, group_due_at)
      at = at + 1 + glen + 6
    end
    if bit.band(fa, REC_A_TIMEOUT) ~= 0 then
      if len < at + 3 then return rec_short('the timeout', at, len) end
      timeout = struct.unpack('>I4', rec, at)
      at = at + 4
    end
    if bit.band(fa, REC_A_CREATED) ~= 0 then
      if len < at + 5 then return rec_short('the created-at time', at, len) end
      at = at + 6
    end
    if bit.band(fb, REC_B_VERSION) ~= 0 then
      if len < at + 1 then return rec_short('the version', at, len) end
      at = at + 2
    end
    if bit.band(fb, REC_B_TRACE) ~= 0 then
      if len < at then return rec_short('the traceparent length', at, len) end
      local tlen = string.byte(rec, at)
      if len < at + tlen then return rec_short('the traceparent', at, len) end
      at = at + 1 + tlen
    end
  end
  return {
    fa = fa, fb = fb, attempts = attempts, claims = claims, claimed_at = claimed_at,
    run_due = run_due, holder = holder, max = max, prio = prio, group = group,
    group_due_at = group_due_at, group_due = group_due, timeout = timeout,
    claim_at = claim_at, claim_end = claim_end, body = at,
    has_error = bit.band(fb, REC_B_ERROR) ~= 0, completed = bit.band(fb, REC_B_COMPLETED) ~= 0,
    cancelled = bit.band(fb, REC_B_CANCELLED) ~= 0, has_result = bit.band(fb, REC_B_RESULT) ~= 0,
  }
end

-- The h of a record of default options (header '\1\0': a new job of no options, and most jobs a
-- claim takes), parsed once per function library and shared: an add or a claim of many such jobs
-- builds one table, not one each (Lua's garbage is paid again in its GC), and a call of one job
-- builds none (a 20-field table each call, where it was made again per call). Read only: the one
-- field a caller writes (group_due) exists only in records with a group. A memo of a constant
-- (function-library.ts keeps it across calls, as the answer the EVAL script works out again).
local REC_DEFAULT_MEMO = {}

-- Parse the header of `rec`: h, or nil and the reason (see rec_parse_full).
local function rec_parse(rec)
  -- Records come from Redis (strings) or are missing (nil, which rec_parse_full reports).
  if rec then
    local format, fa = string.byte(rec, 1, 2)
    if fa == 0 and format == REC_FORMAT then
      local h = REC_DEFAULT_MEMO.h
      if not h then
        h = rec_parse_full('\1\0')
        REC_DEFAULT_MEMO.h = h
      end
      return h
    end
  end
  return rec_parse_full(rec)
end

-- The flag bytes of a header with flags A `fa` and flags B `fb`: B is written only when not 0.
local function rec_flag_bytes(fa, fb)
  if fb == 0 then return string.char(REC_FORMAT, bit.band(fa, 0x7F)) end
  return string.char(REC_FORMAT, bit.bor(fa, REC_A_MORE), fb)
end

-- `rec` with its claim block set to the given values (inserted when it had none). One pack and one
-- sub whatever the other fields are: the claim block is always first (§3.2).
local function rec_claimed(rec, h, attempts, claims, claimed_at, run_due, holder)
  if h.fb == 0 then
    -- The usual header (flags B 0, so not written: rec_flag_bytes): format, flags A and the claim
    -- block in one pack, where the flag bytes were a string of their own.
    local fa = bit.band(bit.bor(h.fa, REC_A_CLAIM), 0x7F)
    return struct.pack(REC_CLAIMED_HEAD, REC_FORMAT, fa, attempts, claims, claimed_at, run_due, holder)
      .. string.sub(rec, h.claim_end)
  end
  return rec_flag_bytes(bit.bor(h.fa, REC_A_CLAIM), h.fb)
    .. struct.pack(REC_CLAIM_BLOCK, attempts, claims, claimed_at, run_due, holder)
    .. string.sub(rec, h.claim_end)
end

-- `rec` with the E flag (a last error is stored in `e`) set when `on`, cleared otherwise.
local function rec_with_error_flag(rec, h, on)
  local fb = on and bit.bor(h.fb, REC_B_ERROR) or bit.band(h.fb, bit.bnot(REC_B_ERROR))
  if fb == h.fb then return rec end
  return rec_flag_bytes(h.fa, fb) .. string.sub(rec, h.claim_at)
end

-- `rec` with one attempt handed back (release: the run did not count). Claims are never lowered:
-- they keep the next token unique.
local function rec_uncharge(rec, h)
  if h.attempts == 0 then return rec end
  return rec_claimed(rec, h, h.attempts - 1, h.claims, h.claimed_at, h.run_due, h.holder)
end

-- `rec` (header h, grouped) with the G block's due time set to `due`: the due of its current
-- scheduling, which names its member in gq (groups.lua), so it is always the one it waits under.
local function rec_with_group_due(rec, h, due)
  return string.sub(rec, 1, h.group_due_at - 1) .. struct.pack('>I6', due) .. string.sub(rec, h.group_due_at + 6)
end

-- A completed record holding `result` (the codec's bytes of the handler's return value): what a
-- worker of delayq 0.2 asks for (ack flag 'u'); later workers send the whole final record ('f').
local function rec_completed_with_result(result)
  return REC_COMPLETED_RESULT_HEAD .. result
end

-- The final record of job `rec` (header h) with flags B `fb` (REC_B_CANCELLED here): the claim
-- block and max attempts are kept, so get() shows the attempts the job used, its max attempts and
-- the due time of its last run (docs/PROTOCOL.md, "The record"); every other field goes. C and M
-- are the first two optional fields, so they are one substring.
local function rec_final(rec, h, fb)
  local stop = h.claim_end - 1
  if bit.band(h.fa, REC_A_MAX) ~= 0 then stop = stop + 2 end
  local fa = bit.bor(bit.band(h.fa, REC_A_CLAIM + REC_A_MAX), REC_A_MORE)
  return string.char(REC_FORMAT, fa, fb) .. string.sub(rec, h.claim_at, stop)
end

-- Why `final` (the completed record a worker sent with its ack, flag 'f') cannot be stored, or
-- nil: it must be what rec_final makes for a completion: format 1, flags A with only C and M,
-- flags B D or D|U, and as long as the fields it announces (the result, with U, follows).
-- Three bytes read, no parse: it is checked for every ack. Flags A with only C and M set besides
-- 0x80 are 0x80 to 0x83, flags B D or D|U 0x08 or 0x28: compared as numbers, where bit.band was a
-- C call each (~400 instructions, five per ack).
local function rec_final_problem(final)
  local format, fa, fb = string.byte(final, 1, 3)
  if format ~= REC_FORMAT or not fb or fa < REC_A_MORE or fa > REC_A_MORE + REC_A_CLAIM + REC_A_MAX
    or (fb ~= REC_B_COMPLETED and fb ~= REC_B_COMPLETED + REC_B_RESULT) then
    return 'final record is not a completed one (01, flags A of C and M only, flags B 08 or 28)'
  end
  local need = 3
  -- fa - 0x80 is 0 to 3: C is its odd values, M its values from 2.
  if (fa - REC_A_MORE) % 2 == 1 then need = need + REC_CLAIM_LEN end
  if fa - REC_A_MORE >= REC_A_MAX then need = need + 2 end
  if #final < need then return 'final record is truncated (' .. #final .. ' bytes, its flags announce ' .. need .. ')' end
  return nil
end

-- The lease token of a claimed header: "<claims>.<claimed at ms>" (§3.4).
local function rec_token(h)
  return string.format('%d.%.0f', h.claims, h.claimed_at)
end

-- The lease member of job `id` with header h: "<token>|<id>", and "\0<group>" for a grouped job,
-- so whatever ends the lease knows the group slot it frees without reading the record.
local function rec_member(h, id)
  local member = rec_token(h) .. '|' .. id
  if h.group then member = member .. '\0' .. h.group end
  return member
end

-- The job id of a lease member (the token and the optional "\0<group>" stripped).
local function member_id(member)
  local bar = string.find(member, '|', 1, true)
  local rest = bar and string.sub(member, bar + 1) or member
  local zero = string.find(rest, '\0', 1, true)
  if zero then return string.sub(rest, 1, zero - 1) end
  return rest
end

-- The job id and the group (nil for an ungrouped job) of a lease member, in one pass: the claim's
-- acks need both for every job, and member_id then member_group searched for the '\0' twice.
local function member_id_group(member)
  local bar = string.find(member, '|', 1, true)
  local from = bar and bar + 1 or 1
  local zero = string.find(member, '\0', from, true)
  if zero then return string.sub(member, from, zero - 1), string.sub(member, zero + 1) end
  return string.sub(member, from), nil
end

-- The token of a lease member (what precedes the first '|'; tokens have none).
local function member_token(member)
  local bar = string.find(member, '|', 1, true)
  return bar and string.sub(member, 1, bar - 1) or ''
end

-- The group of a lease member, or nil for an ungrouped job.
local function member_group(member)
  local zero = string.find(member, '\0', 1, true)
  return zero and string.sub(member, zero + 1) or nil
end
