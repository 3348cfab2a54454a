-- Checks of a repeating schedule's arguments (schedule-upsert, -tick, -remove, -read and
-- migrate-templates), on top of args.lua (utf8_problem). Each returns nil when the value is good,
-- else the reason, naming the argument (`what`).

-- A schedule name as src/schedule/definition.ts accepts it: at most 200 UTF-16 code units (600
-- bytes of UTF-8), no white space. Its occurrences' ids are "<name>@<due>", ids a worker must be
-- able to ack, so control characters and bytes that are not UTF-8 are refused too.
local function check_schedule_name(name, what)
  if type(name) ~= 'string' then return what .. ' is missing' end
  if #name == 0 then return what .. ' is empty' end
  if #name > 600 then return what .. ' is longer than 600 bytes (200 UTF-16 code units)' end
  if string.find(name, '[%s%c]') then return what .. ' contains white space or a control character' end
  local bad = utf8_problem(name)
  if bad then return what .. ' ' .. bad end
  return nil
end

-- A definition's rev: the digest src/schedule/definition.ts withRev writes (20 hex digits; any
-- 1..64 letters or digits are taken, so a later digest length still works).
local function check_rev(rev, what)
  if type(rev) ~= 'string' or not string.find(rev, '^%w+$') or #rev > 64 then
    return what .. ' ' .. tostring(rev) .. ' is not a rev (1..64 letters and digits)'
  end
  return nil
end

-- A number in a decoded definition that must be whole and in [min, max].
local function whole_in(value, min, max)
  return type(value) == 'number' and value % 1 == 0 and value >= min and value <= max
end

-- A stored definition (the `schedules` hash's JSON, src/schedule/definition.ts StoredDefinition)
-- as the schedulers read it back (parseDefinition): an object with v 2, rev (equal to `rev`, the
-- value passed beside it, when given), spec { every } or { cron, tz? }, missed 'skip' or 'runOnce',
-- grace ms, m 1..65535 attempts, version 1..65535. A definition they would refuse is refused here,
-- before it is stored, so no scheduler meets it.
local function check_definition(json, what, rev)
  if type(json) ~= 'string' then return what .. ' is missing' end
  local ok, d = pcall(cjson.decode, json)
  if not ok or type(d) ~= 'table' then return what .. ' is not a JSON object' end
  if d.v ~= 2 then return what .. ': v is ' .. tostring(d.v) .. ', not 2 (layout 2\'s definition format)' end
  if type(d.rev) ~= 'string' or check_rev(d.rev, 'rev') then return what .. ': rev is not a rev (1..64 letters and digits)' end
  if rev and d.rev ~= rev then return what .. ': rev ' .. d.rev .. ' disagrees with the rev passed, ' .. rev end
  local spec = d.spec
  if type(spec) ~= 'table' or not (whole_in(spec.every, 1, 2 ^ 53) or type(spec.cron) == 'string') then
    return what .. ': spec is not { every: ms } or { cron }'
  end
  if d.missed ~= 'skip' and d.missed ~= 'runOnce' then return what .. ': missed is not skip or runOnce' end
  if not whole_in(d.grace, 0, 2 ^ 53) then return what .. ': grace is not a whole number of ms >= 0' end
  if not whole_in(d.m, 1, 65535) then return what .. ': m (attempts) is not a whole number 1..65535' end
  if not whole_in(d.version, 1, 65535) then return what .. ': version is not a whole number 1..65535' end
  return nil
end
