-- configure: change a queue's live settings in its config record (issue 29; the group bounds),
-- and count the change, so every client can tell its settings are stale (src/definition/settings.ts).
--
-- KEYS[1] config  HASH the queue's config record (written by config.lua at the queue's first use)
-- ARGV[1..] field, value pairs: only live fields (groups.concurrency: a whole number >= 1;
--         groups.limit: '<max>/<per ms>' or 'none')
-- Returns: the record's settings.version after the change (1 for the first change).
--         Errors (nothing written): 'DELAYQ_MIGRATING <since ms>|<who>' while `delayq migrate`
--         converts the queue; 'DELAYQ_BAD_ARG <reason>' for a field that is not live, a malformed
--         value, or a queue without a record (no client has opened it).
-- Guarantee: the fields change together in one step; the fixed fields (format, layout,
--         partitions, codec, events) are never written here. Workers learn of the change from a
--         `G` wake message their caller publishes after this call (they re-read the record).

--!include args.lua

local LIVE = {
  ['groups.concurrency'] = '^[1-9]%d?%d?%d?%d?%d?%d?$',
  ['groups.limit'] = '^[1-9]%d*/[1-9]%d*$',
}
if #ARGV == 0 or #ARGV % 2 == 1 then return bad_arg('ARGV must be field, value pairs; got ' .. #ARGV .. ' values') end
for i = 1, #ARGV, 2 do
  local field, value = ARGV[i], ARGV[i + 1]
  local pattern = LIVE[field]
  if not pattern then return bad_arg('field ' .. tostring(field) .. ' is not a live setting (groups.concurrency, groups.limit)') end
  if not string.match(value, pattern) and not (field == 'groups.limit' and value == 'none') then
    return bad_arg(field .. ' value ' .. tostring(value) .. ' is malformed')
  end
end
local state = redis.call('HMGET', KEYS[1], 'format', 'migrating')
if state[2] then return redis.error_reply('DELAYQ_MIGRATING ' .. state[2]) end
if not state[1] then return bad_arg('the queue has no config record yet: open it (a Queue call or a Worker) first') end
redis.call('HSET', KEYS[1], unpack(ARGV))
return redis.call('HINCRBY', KEYS[1], 'settings.version', 1)
