-- Checks of the ARGV a caller passes, for the scripts a producer in another language calls
-- directly (docs/PROTOCOL.md): such a producer has no TypeScript validation in front of it, so a
-- value in seconds instead of ms, a negative delay or a float must be refused here, by name,
-- before anything is written, never stored as it came (docs/DESIGN.md invariant 10).
-- Each check returns nil when the value is good, else the reason (a string); the script returns
-- bad_arg(reason), an error reply 'DELAYQ_BAD_ARG <reason>' (src/redis/script-errors.ts).

-- Due times outside [2000-01-01, 9999-12-31] are refused: a due time in 1970 is almost always
-- epoch seconds passed as ms, and past 9999 ISO dates need six-digit years.
local MIN_DUE_MS = 946684800000
local MAX_DUE_MS = 253402300799999
-- Ids: what src/job-options.ts accepts (at most 512 UTF-16 code units), as bytes: 3 per unit at most.
local MAX_ID_BYTES = 1536

-- An error reply holds one line: control characters of a caller's value become '?', and a long
-- value is cut, so the reason stays readable.
local function bad_arg(reason)
  return redis.error_reply('DELAYQ_BAD_ARG ' .. string.sub(string.gsub(reason, '%c', '?'), 1, 300))
end

-- A whole number written in plain decimal digits (no sign, fraction, exponent or spaces).
local function whole_ms(text)
  return type(text) == 'string' and string.match(text, '^%d+$') ~= nil
end

-- An id's size; its characters are first_id_with_control's to check, for a batch at once.
local function check_id_size(id)
  if type(id) ~= 'string' or #id == 0 then return 'id is empty' end
  if #id > MAX_ID_BYTES then return 'id is longer than ' .. MAX_ID_BYTES .. ' bytes' end
  return nil
end

-- The control characters (what the pattern class %c matches: bytes 0-31 and 127), one string each.
local CONTROL_CHARACTERS = {
  '\0', '\1', '\2', '\3', '\4', '\5', '\6', '\7', '\8', '\9', '\10', '\11', '\12', '\13', '\14',
  '\15', '\16', '\17', '\18', '\19', '\20', '\21', '\22', '\23', '\24', '\25', '\26', '\27', '\28',
  '\29', '\30', '\31', '\127'
}

-- The index of the first of ids[1..n] that holds a control character, or nil. One plain search
-- per control character over all the ids joined: a pattern search ('%c') per id cost Redis about
-- 2,000 instructions per job of a bulk add, these few dozen.
local function first_id_with_control(ids, n)
  local all = table.concat(ids, '', 1, n)
  for _, c in ipairs(CONTROL_CHARACTERS) do
    if string.find(all, c, 1, true) then
      for i = 1, n do
        if string.find(ids[i], '%c') then return i end
      end
    end
  end
  return nil
end

-- check_when for a value already a whole number of ms (a packed add's uint48): only its range.
-- `text` is the value as the caller wrote it, for the reason (default: its digits).
local function check_when_ms(kind, ms, now, text)
  if kind ~= 'd' and kind ~= 'a' then
    return nil, 'when-kind ' .. tostring(kind) .. ' is not d (delay ms) or a (epoch ms)'
  end
  local due = kind == 'd' and now + ms or ms
  if due >= MIN_DUE_MS and due <= MAX_DUE_MS then return due, nil end
  local value = text or string.format('%.0f', ms)
  if due < MIN_DUE_MS then
    return nil, 'due time ' .. value .. ' is before 2000-01-01 (946684800000); epoch seconds instead of ms?'
  end
  return nil, (kind == 'd' and 'delay' or 'due time') .. ' ' .. value .. ' puts the job after 9999-12-31'
end

-- kind 'd': value is a delay in ms from now; 'a': value is an absolute epoch ms. Returns the due
-- time, or nil and the reason.
local function check_when(kind, value, now)
  if kind ~= 'd' and kind ~= 'a' then
    return nil, 'when-kind ' .. tostring(kind) .. ' is not d (delay ms) or a (epoch ms)'
  end
  local what = kind == 'd' and 'delay' or 'due time'
  if not whole_ms(value) then
    return nil, what .. ' ' .. tostring(value) .. ' is not a whole number of ms >= 0 (digits only)'
  end
  -- More than 15 digits is past 9999 either way, and might not be exact in a Lua double.
  if #value > 15 then return nil, what .. ' ' .. value .. ' puts the job after 9999-12-31' end
  return check_when_ms(kind, tonumber(value), now, value)
end

-- The class an add's record implies ('' default, 'p<prio>', 'g<group>'): what a packed add, which
-- sends none, is checked as (check_record_class below).
local function record_class(h)
  if h.group then return 'g' .. h.group end
  if h.prio ~= 0 then return 'p' .. h.prio end
  return ''
end

-- An events cap: a whole number, negative for "failures only" (events.lua).
local function check_events_cap(text)
  if type(text) ~= 'string' or #text > 16 or not string.match(text, '^%-?%d+$') then
    return 'events cap ' .. tostring(text) .. ' is not a whole number'
  end
  return nil
end

-- The class an add passes beside a record ('' default, 'p<prio>', 'g<group>') must repeat the
-- record's header (h from rec_parse): a disagreement is refused, never silently resolved
-- (docs/DESIGN.md invariant 10). `wheel`: the queue uses the wheel strategy, which has no priorities.
-- Returns nil when they agree, else the reason.
local function check_record_class(class, h, wheel)
  if type(class) ~= 'string' then return 'class is missing' end
  local kind = string.sub(class, 1, 1)
  if kind == 'g' or h.group then
    local group = string.sub(class, 2)
    if kind ~= 'g' then return 'class ' .. class .. ' disagrees with the record\'s group ' .. h.group end
    if not h.group then return 'class ' .. class .. ' but the record has no group' end
    if group ~= h.group then return 'class g' .. group .. ' disagrees with the record\'s group ' .. h.group end
    if string.find(group, '%c') then return 'group contains a control character' end
    if h.prio ~= 0 then return 'a grouped job cannot have a priority (record has ' .. h.prio .. ')' end
    if wheel then return 'group is not supported with the wheel strategy' end
    return nil
  end
  if class == '' then
    if h.prio ~= 0 then return 'class is default but the record has priority ' .. h.prio end
    return nil
  end
  if kind ~= 'p' or not string.match(class, '^p%-?[1-9]%d?%d?%d?$') then
    return 'class ' .. class .. ' is not empty, p<priority> or g<group>'
  end
  local prio = tonumber(string.sub(class, 2))
  if prio < -1024 or prio > 1023 then return 'class ' .. class .. ': priority must be -1024..1023' end
  if prio ~= h.prio then
    return 'class ' .. class .. ' disagrees with the record\'s priority ' .. h.prio
  end
  if wheel then return 'priority is not supported with the wheel strategy' end
  return nil
end
