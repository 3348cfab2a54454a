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
--          Error 'DELAYQ_BAD_ARG <reason>' (nothing written) for KEYS other than these 2 HASHes,
--          an N that is not 1..1000000 or does not match the ARGV count, a name as schedule-upsert
--          takes it, or a new definition the schedulers could not read (schedule-args.lua).
-- Guarantee: a schedule's definition and template change together, and only from what was read.

--!include args.lua
--!include schedule-args.lua

-- Every value checked before the first schedule is written (docs/DESIGN.md invariant 10): a bad
-- one found in the loop would leave the schedules before it converted and the rest not.
local problem = check_key_count(2, false) or check_whole(ARGV[1], 'ARGV[1] N', 1, 1000000)
if problem then return bad_arg(problem) end
local n = tonumber(ARGV[1])
if #ARGV ~= 1 + n * 5 then
  return bad_arg('ARGV has ' .. #ARGV .. ' values; N = ' .. n .. ' schedules need 1 + 5 per schedule')
end
for i = 0, n - 1 do
  local b = 2 + i * 5
  local of = ' (schedule ' .. (i + 1) .. ' of ' .. n .. ')'
  problem = check_schedule_name(ARGV[b], 'ARGV[' .. b .. '] name' .. of)
    or check_definition(ARGV[b + 3], 'ARGV[' .. (b + 3) .. '] new definition' .. of, nil)
  if problem then return bad_arg(problem) end
end
problem = check_key_types('hh', false)
if problem then return bad_arg(problem) end

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
