-- The forms of the config record's fields (docs/PROTOCOL.md, "The queue's config record"), for
-- the scripts that read or write the record: config.lua, configure.lua, migrate-begin.lua,
-- repartition.lua.
-- Needs nothing else.

-- What each field's value must look like, recorded or passed: a value of another form (a
-- partitions of '01', a version of 'abc') is refused by name, never compared as a number that
-- prints like the client's own (issue 32).
local FIELD_FORMS = {
  format = { '^[1-9]%d?%d?%d?$', 'a whole number 1..9999' },
  partitions = { '^[1-9]%d?%d?%d?$', 'a whole number 1..1024, no leading zero', 1024 },
  -- Written by repartition.lua: the count before the first re-partition, by which a job whose id
  -- or group the user chose is still placed (its partition never changes).
  ['partitions.base'] = { '^[1-9]%d?%d?%d?$', 'a whole number 1..1024, no leading zero', 1024 },
  layout = { '^zset$', "'zset' or 'wheel:<granularity ms>'", nil, '^wheel:[1-9]%d*$' },
  codec = { '^[^%c]+$', 'a codec name (json, msgpack, protobuf or a custom codec\'s name)' },
  events = { '^%-?[1-9]%d?%d?%d?%d?%d?%d?%d?%d?$', 'a whole number (0: none; -N: failures only)', nil, '^0$' },
  version = { '^[1-9]%d?%d?%d?%d?$', 'a whole number 1..65535', 65535 },
  ['groups.concurrency'] = { '^[1-9]%d?%d?%d?%d?%d?%d?$', 'a whole number 1..1000000', 1000000 },
  ['groups.limit'] = { '^none$', "'none' or '<max>/<per ms>'", nil, '^[1-9]%d*/[1-9]%d*$' },
}
-- nil when `value` is of the form `field` takes, else the rule it breaks.
local function field_problem(field, value)
  local form = FIELD_FORMS[field]
  if not form then return nil end
  local ok = string.find(value, form[1]) or (form[4] and string.find(value, form[4]))
  if ok and form[3] and tonumber(value) > form[3] then ok = nil end
  if ok then return nil end
  return form[2]
end
