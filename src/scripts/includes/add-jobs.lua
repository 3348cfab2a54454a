-- add.lua, step 2: the jobs. Reads each job's id, mode, when and record (and class, in the per-job
-- form) and checks them all: one bad job refuses the whole call, before anything is written.
--
-- Inputs:  call (add-call.lua); ARGV from call.first.
-- Outputs: jobs = { ids, modes ('k', 'r' or 'n'), dues (ms, server clock), recs, heads (the parsed
--          headers, rec_parse), default_h (the one header every job of default options shares) },
--          or nil and an error reply: DELAYQ_BAD_ARG 'job <i> of <N>: <reason>', or the wheel's
--          DELAYQ_WRONG_BUCKET when a bucket a job needs was not passed. Read only.
-- Cost:    per job one struct.unpack (packed form) and one string.byte; a job of the default
--          header, packed, is checked inline, with no Lua function call (one costs Redis ~450
--          instructions, bench/redis-instructions.ts). The wheel: an HMGET of wc for replaced ids.
-- Needs:   prelude.lua, args.lua, record.lua, wheel.lua.

local function add_jobs(call)
  local n, packed, now, called, wheel = call.n, call.packed, call.now, call.called, call.K.wi ~= nil
  -- Each job's id, mode, when and record (and class, in the per-job form), read in one pass
  -- first: the packed ones under one pcall (a pcall per job cost more than the rest of reading
  -- it). One struct.unpack reads a packed job ('c0': a string as long as the number before it); a
  -- length past the value's end makes it raise, which is refused as such, never read short.
  local ids, modes, whens, recs, classes = {}, {}, {}, {}, {}
  if packed then
    local blob, at, count = ARGV[call.first], 1, 0
    local ok = pcall(function()
      for i = 1, n do
        if at > #blob then return end
        ids[i], modes[i], whens[i], recs[i], at = struct.unpack('>Hc0c2I6I4c0', blob, at)
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
    if problem then return nil, bad_arg(problem) end
  else
    for i = 1, n do
      local base = call.first + (i - 1) * 5
      ids[i], modes[i], whens[i], recs[i], classes[i] = ARGV[base], ARGV[base + 1], ARGV[base + 2], ARGV[base + 3], ARGV[base + 4]
    end
  end
  -- The first job whose id holds a control character, and the first that is not UTF-8 (a worker
  -- could never ack it, issue 32): each searched in all the ids at once.
  local with_control = first_id_with_control(ids, n)
  local not_utf8 = first_id_not_utf8(ids, n)

  -- A mode's two parts: when-kind and what to do with an existing id. A table lookup, where two
  -- string.sub calls per job cost more.
  local MODE_KIND = { dk = 'd', dr = 'd', dn = 'd', ak = 'a', ar = 'a', an = 'a' }
  local MODE_KEEP = { dk = 'k', dr = 'r', dn = 'n', ak = 'k', ar = 'r', an = 'n' }
  -- The header of a new job with default options (flags A and B 0): one parsed table shared by
  -- every such job of the call (record.lua's REC_DEFAULT_MEMO), nothing in it to check.
  local default_h = rec_parse(string.char(REC_FORMAT, 0))

  local dues, heads = {}, {}
  for i = 1, n do
    local id, mode, when, rec = ids[i], modes[i], whens[i], recs[i]
    local kind, keep = MODE_KIND[mode], MODE_KEEP[mode]
    local size, problem, due, h = #id, nil, nil, nil
    if size == 0 or size > MAX_ID_BYTES then problem = check_id_size(id) end
    if not problem and i == with_control then problem = 'id contains a control character' end
    if not problem and i == not_utf8 then problem = 'id ' .. utf8_problem(id) end
    if not problem and not keep then
      problem = 'mode ' .. tostring(mode) .. ' is not d or a followed by k (keep), r (replace) or n (new id)'
    end
    if not problem then
      if packed then
        -- A packed when is a uint48: whole and at most 15 digits already, so only its range is
        -- checked (check_when_ms's rule; it words the refusal).
        due = kind == 'd' and now + when or when
        if due < MIN_DUE_MS or due > MAX_DUE_MS then due, problem = check_when_ms(kind, when, now) end
        -- The delay counts from the add() call, which was `elapsed` ms before the send
        -- (docs/ARCHITECTURE.md §6.3): a delay shorter than a hold-up before the send is due at
        -- call + delay, already past.
        if due and kind == 'd' then due = called + when end
      else
        due, problem = check_when(kind, when, now)
        if due and kind == 'd' then due = called + tonumber(when) end
      end
    end
    if not problem then
      local format, fa = string.byte(rec, 1, 2)
      if fa == 0 and format == REC_FORMAT then
        h = default_h
      else
        h, problem = rec_parse(rec)
        -- A producer never sends a claim block, even an empty one: the claims field is the
        -- worker's (a replace carries the old job's block over itself).
        if not h then
          -- rec_parse's reason.
        elseif rec_has(h.fa, REC_A_CLAIM) then
          problem = 'record has the C flag (a claim block); a new job\'s record must not carry one'
        elseif h.has_error or h.completed or h.cancelled or h.has_result then
          problem = 'record is not a new job\'s: it has the E, D, Q or U flag'
        elseif bit.band(h.fb, 0x40) ~= 0 then
          -- F (record.lua): a flow's job has links only add-flow.lua writes; alone it would be a
          -- flow child no parent waits for.
          problem = 'record has the F flag (a flow\'s job): add flows with add-flow.lua (queue.addFlow)'
        else
          problem = check_new_header(rec, h)
        end
      end
    end
    -- The packed form sends no class: it is the header's, so only the checks of the class itself
    -- (a group's characters, priority or group with the wheel) remain, and none for the default.
    if not problem and not packed then
      problem = check_record_class(classes[i], h, wheel)
    elseif not problem and h ~= default_h and (h.prio ~= 0 or h.group) then
      problem = check_record_class(record_class(h), h, wheel)
    end
    if problem then return nil, bad_arg('job ' .. i .. ' of ' .. n .. ': ' .. problem) end
    modes[i], dues[i], heads[i] = keep, due, h
  end
  if wheel then
    -- New buckets by the due times, and the buckets replaced jobs leave (wheel.lua finds those by id).
    local leaving = {}
    for i = 1, n do
      if modes[i] == 'r' then leaving[#leaving + 1] = ids[i] end
    end
    local missing = wheel_missing(call.K, dues, leaving, now)
    if missing then return nil, missing end
  end
  return { ids = ids, modes = modes, dues = dues, recs = recs, heads = heads, default_h = default_h }
end
