-- configure: change a queue's live settings in its config record (issue 29; the group bounds),
-- and count the change, so every client can tell its settings are stale (src/definition/settings.ts).
--
-- KEYS[1] config  HASH the queue's config record (written by config.lua at the queue's first use)
-- ARGV[1..] field, value pairs: only live fields (groups.concurrency: a whole number >= 1;
--         groups.limit: '<max>/<per ms>' or 'none')
-- Returns: the record's settings.version after the change (1 for the first change).
--         Errors (nothing written): 'DELAYQ_MIGRATING <since ms>|<who>' while `delayq migrate`
--         converts the queue; 'DELAYQ_BAD_ARG <reason>' for KEYS other than one HASH, a field
--         that is not live or is given twice, a malformed value (the forms of config.lua), or a
--         queue without a record (no client has opened it).
-- Guarantee: the fields change together in one step; the fixed fields (format, layout,
--         partitions, codec, events) are never written here. Workers learn of the change from a
--         `G` wake message their caller publishes after this call (they re-read the record).

--!include args.lua
--!include config-fields.lua

local LIVE = { ['groups.concurrency'] = true, ['groups.limit'] = true }
local key_problem = check_key_count(1, false) or check_key_types('h', false)
if key_problem then return bad_arg(key_problem) end
if #ARGV == 0 or #ARGV % 2 == 1 then return bad_arg('ARGV must be field, value pairs; got ' .. #ARGV .. ' values') end
local seen = {}
for i = 1, #ARGV, 2 do
  local field, value = ARGV[i], ARGV[i + 1]
  if not LIVE[field] then
    return bad_arg('ARGV[' .. i .. '] field ' .. field .. ' is not a live setting (groups.concurrency, groups.limit)')
  end
  -- HSET keeps the last of a repeated field: refused, so no value is dropped unseen.
  if seen[field] then return bad_arg('ARGV[' .. i .. '] field ' .. field .. ' is given twice') end
  seen[field] = true
  local rule = field_problem(field, value)
  if rule then return bad_arg('ARGV[' .. (i + 1) .. '] ' .. field .. ' value ' .. value .. ' is not ' .. rule) end
end
local state = redis.call('HMGET', KEYS[1], 'format', 'migrating')
if state[2] then return redis.error_reply('DELAYQ_MIGRATING ' .. state[2]) end
if not state[1] then return bad_arg('the queue has no config record yet: open it (a Queue call or a Worker) first') end
redis.call('HSET', KEYS[1], unpack(ARGV))
return redis.call('HINCRBY', KEYS[1], 'settings.version', 1)
