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

-- The KEYS a script takes: exactly `n`, or with `wheel` n + 3 or more (ready, wheel index, wheel
-- count, then bucket lists, wheel.lua). A key left out would make a later command fail after
-- earlier ones wrote (issue 32: a cancel without pg removed the lease, then erred): refused first.
local function check_key_count(n, wheel)
  local got = #KEYS
  if got == n or (wheel and got >= n + 3) then return nil end
  local want = wheel and (n .. ' (or ' .. (n + 3) .. ' or more with the wheel: wr, wi, wc, then bucket lists)') or tostring(n)
  return 'KEYS has ' .. got .. ' keys; this script takes ' .. want
end

-- nil when `s` is valid UTF-8 (shortest forms, no surrogates, at most U+10FFFF), else the reason.
-- Node reads ids and group names as UTF-8 and replaces what is not, so such an id could never be
-- acked (its lease member would differ): refused at the door. ASCII, the common case, is one search.
local UTF8_LEAD = { [2] = 0x1F, [3] = 0x0F, [4] = 0x07 }
local UTF8_MIN = { [2] = 0x80, [3] = 0x800, [4] = 0x10000 }
local function utf8_problem(s)
  if not string.find(s, '[\128-\255]') then return nil end
  local i, n = 1, #s
  while i <= n do
    local c = string.byte(s, i)
    if c < 0x80 then
      i = i + 1
    else
      local len = (c >= 0xC2 and c <= 0xDF and 2) or (c >= 0xE0 and c <= 0xEF and 3) or (c >= 0xF0 and c <= 0xF4 and 4) or nil
      if not len or i + len - 1 > n then return 'is not valid UTF-8 (byte ' .. i .. ')' end
      local cp = bit.band(c, UTF8_LEAD[len])
      for k = 1, len - 1 do
        local b = string.byte(s, i + k)
        if b < 0x80 or b > 0xBF then return 'is not valid UTF-8 (byte ' .. (i + k) .. ')' end
        cp = cp * 64 + (b - 0x80)
      end
      if cp < UTF8_MIN[len] or cp > 0x10FFFF or (cp >= 0xD800 and cp <= 0xDFFF) then
        return 'is not valid UTF-8 (byte ' .. i .. ')'
      end
      i = i + len
    end
  end
  return nil
end

-- The index of the first of ids[1..n] that is not valid UTF-8, or nil; all-ASCII batches (the
-- usual ones) cost one search over the ids joined.
local function first_id_not_utf8(ids, n)
  if not string.find(table.concat(ids, '', 1, n), '[\128-\255]') then return nil end
  for i = 1, n do
    if utf8_problem(ids[i]) then return i end
  end
  return nil
end

-- One id passed alone (cancel, get): present, of a size an add accepts, no control character,
-- valid UTF-8. `what` names the argument ('ARGV[1] id').
local function check_id(id, what)
  if type(id) ~= 'string' then return what .. ' is missing' end
  if #id == 0 then return what .. ' is empty' end
  if #id > MAX_ID_BYTES then return what .. ' is longer than ' .. MAX_ID_BYTES .. ' bytes' end
  if string.find(id, '%c') then return what .. ' contains a control character' end
  local bad = utf8_problem(id)
  if bad then return what .. ' ' .. bad end
  return nil
end

-- A whole number in plain digits (no sign, fraction, exponent or spaces) from `min` to `max`
-- (both below 2^53). `what` names the argument ('ARGV[2] max jobs'); nil when good, else the reason.
local function check_whole(text, what, min, max)
  if type(text) ~= 'string' then return what .. ' is missing' end
  if not string.find(text, '^%d+$') or #text > 16 or tonumber(text) < min or tonumber(text) > max then
    return what .. ' ' .. text .. ' is not a whole number ' .. string.format('%.0f', min) .. '..'
      .. string.format('%.0f', max) .. ' (digits only)'
  end
  return nil
end

-- ARGV holds exactly `n` values (a script without variadic arguments): a value too many is a
-- caller that meant another form, refused rather than ignored. `what` names the script.
local function check_arg_count(n, what)
  if #ARGV == n then return nil end
  return 'ARGV has ' .. #ARGV .. ' values; ' .. what .. ' takes ' .. n
end

-- A group name passed alone (group-pause, -resume, -cancel, -jobs, -refresh): what a record's G
-- field can hold (1..255 bytes, no control character, UTF-8), so a name no job can carry is
-- refused rather than looked for, and gq's lex ranges (which rely on no 0x00 or 0x01 in a name) hold.
local function check_group(g, what)
  if type(g) ~= 'string' then return what .. ' is missing' end
  if #g == 0 then return what .. ' is empty' end
  if #g > 255 then return what .. ' is longer than 255 bytes' end
  if string.find(g, '%c') then return what .. ' contains a control character' end
  local bad = utf8_problem(g)
  if bad then return what .. ' ' .. bad end
  return nil
end

-- The Redis type each key must hold when it exists, by letter: h HASH, z ZSET, l LIST, s STRING,
-- x STREAM ('-': a channel, or a key whose type does not matter).
local KEY_TYPE_NAMES = { h = 'hash', z = 'zset', l = 'list', s = 'string', x = 'stream' }

-- nil when every KEYS[i] is absent or of the type letter i of `types` says; with `wheel`, the keys
-- after those are the wheel's (wr LIST, wi ZSET, wc HASH, then bucket LISTs, wheel.lua). Else the
-- reason, naming the key. A script whose writes are spread over several keys checks this before
-- the first: a key of another type fails its command mid-script, after earlier commands wrote
-- (docs/DESIGN.md invariant 10). One TYPE per key: for scripts off the hot path.
local function check_key_types(types, wheel)
  local n = #types
  for i = 1, #KEYS do
    local want = '-'
    if i <= n then
      want = string.sub(types, i, i)
    elseif wheel then
      want = (i == n + 2 and 'z') or (i == n + 3 and 'h') or 'l'
    end
    if want ~= '-' then
      local got = redis.call('TYPE', KEYS[i])['ok']
      if got ~= 'none' and got ~= KEY_TYPE_NAMES[want] then
        return 'KEYS[' .. i .. '] ' .. KEYS[i] .. ' holds a ' .. got .. ', not a ' .. KEY_TYPE_NAMES[want]
      end
    end
  end
  return nil
end

-- A group concurrency as the config record holds it: whole, 0 (none recorded) to 1000000.
local function check_group_concurrency(text, what)
  if type(text) ~= 'string' or not string.match(text, '^%d+$') or #text > 7 or tonumber(text) > 1000000 then
    return what .. ' ' .. tostring(text) .. ' is not a whole number 0..1000000 (the config record\'s groups.concurrency, 0 when none)'
  end
  return nil
end

-- A lease member as a claim wrote it: "<claims>.<claimed at ms>|<id>", optionally "\0<group>".
local function check_member(member, what)
  if type(member) ~= 'string' then return what .. ' is missing' end
  if not string.find(member, '^%d+%.%d+|.') then
    return what .. ' ' .. member .. ' is not a lease member <claims>.<claimed at ms>|<id>'
  end
  return nil
end

-- The header fields a producer writes, in ranges a worker can run (docs/PROTOCOL.md "The record"):
-- M 1..65535, backoff kind 1 or 2 (+0x80 jitter) with a delay below 2^32 - 1, timeout >= 1,
-- version >= 2. `h` is rec_parse's (record.lua); the flag bits are those of record.lua, repeated
-- here because this file is included first. nil when good, else the reason.
local function check_new_header(rec, h)
  if h.fa == 0 and h.fb == 0 then return nil end
  if bit.band(h.fa, 0x02) ~= 0 and h.max < 1 then return 'record max attempts is 0; it must be 1..65535' end
  if h.timeout and h.timeout < 1 then return 'record timeout is 0 ms; it must be 1..4294967295' end
  local at = h.fa >= 0x80 and 4 or 3
  if bit.band(h.fa, 0x02) ~= 0 then at = at + 2 end
  if bit.band(h.fa, 0x04) ~= 0 then
    local kind, delay = struct.unpack('>BI4', rec, at)
    local base = bit.band(kind, 0x7F)
    if (base ~= 1 and base ~= 2) then
      return 'record backoff kind ' .. kind .. ' is unknown (1 fixed, 2 exponential, +0x80 jitter)'
    end
    if delay == 0xFFFFFFFF then return 'record backoff delay is 4294967295; it must be below 2^32 - 1' end
    at = at + 9
  end
  if bit.band(h.fb, 0x01) ~= 0 then
    if bit.band(h.fa, 0x08) ~= 0 then at = at + 2 end
    if h.group then at = at + 1 + #h.group + 6 end
    if h.timeout then at = at + 4 end
    if bit.band(h.fa, 0x40) ~= 0 then at = at + 6 end
    local version = struct.unpack('>H', rec, at)
    if version < 2 then
      return 'record version is ' .. version .. '; a V field holds 2..65535 (version 1 is written as no V)'
    end
  end
  return nil
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
    if utf8_problem(group) then return 'group ' .. utf8_problem(group) end
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
