-- migrate-templates: re-encode repeating schedules for `delayq migrate` (docs/ARCHITECTURE.md
-- §10 step 3): each payload template goes from a v1 envelope to the payload bytes layout 2 stores,
-- with its definition's rev recomputed over the new bytes. Names and high-water marks
-- (`schedules:last`) are not touched, so no occurrence is added twice.
--
-- KEYS[1] schedules  HASH name -> definition JSON
-- KEYS[2] payloads   HASH name -> payload template
-- ARGV[1] N, then 5 per schedule: name, old definition, old template (as read), new definition,
--         new template
-- Returns: per schedule 'ok', or 'changed' (nothing written for it: it was upserted since the
--          read; the caller reads it again).
-- Guarantee: a schedule's definition and template change together, and only from what was read.

local n = tonumber(ARGV[1])
if not n or #ARGV ~= 1 + n * 5 then
  return redis.error_reply('DELAYQ_BAD_ARG ARGV has ' .. #ARGV .. ' values; N = ' .. tostring(ARGV[1]) ..
    ' schedules need 1 + 5 per schedule')
end
local out = {}
for i = 0, n - 1 do
  local b = 2 + i * 5
  local name, old_definition, old_template = ARGV[b], ARGV[b + 1], ARGV[b + 2]
  local definition, template = ARGV[b + 3], ARGV[b + 4]
  if redis.call('HGET', KEYS[1], name) == old_definition and redis.call('HGET', KEYS[2], name) == old_template then
    redis.call('HSET', KEYS[1], name, definition)
    redis.call('HSET', KEYS[2], name, template)
    out[#out + 1] = 'ok'
  else
    out[#out + 1] = 'changed'
  end
end
return out
