-- repartition: raise a queue's recorded partition count on the running queue (issue 34). Jobs
-- never move: every job stays in the partition it is in, and workers claim from every partition,
-- the old ones included. What changes is where new jobs go: a job with a generated id goes to its
-- id's partition among the new count; a job whose id or group the user chose stays placed by the
-- count before the first re-partition, recorded here as `partitions.base`, so no id can exist in
-- two partitions (add's dedupe is one partition's) and no group's bound splits
-- (docs/CLUSTER.md, "Re-partitioning a live queue").
--
-- KEYS[1] config  HASH the queue's config record (written by config.lua at the queue's first use)
-- ARGV[1] the partition count to grow to: a whole number 1..1024, no leading zero
-- Returns: { count before, count after, base count, settings.version after }; a count equal to
--         the recorded one writes nothing (the settings version is the recorded one).
--         Errors (nothing written): 'DELAYQ_REPARTITION_REFUSED <reason>' for a count below the
--         recorded one (shrinking would strand the jobs of the partitions dropped), a queue
--         with group bounds recorded, a wheel queue (one ready list, no partitions) or a queue
--         without a record; 'DELAYQ_MIGRATING <since ms>|<who>' while `delayq migrate` converts
--         the queue; 'DELAYQ_BAD_CONFIG <key> <field> <value> is not <rule>' for a recorded
--         partitions of the wrong form; 'DELAYQ_BAD_ARG <reason>' for KEYS other than one HASH
--         or an ARGV other than one count of that form.
-- Guarantee: the count, the base and the settings version change in one step. Workers learn of
--         it from a `G` wake message their caller publishes on every partition's channel after
--         this call (they read the record again, as after configure.lua), producers within a
--         second (they read it again while they add).

--!include args.lua
--!include config-fields.lua

local key_problem = check_key_count(1, false) or check_key_types('h', false)
if key_problem then return bad_arg(key_problem) end
if #ARGV ~= 1 then return bad_arg('ARGV has ' .. #ARGV .. ' values; repartition takes 1 (the partition count)') end
local rule = field_problem('partitions', ARGV[1])
if rule then return bad_arg('ARGV[1] partitions ' .. ARGV[1] .. ' is not ' .. rule) end
local to = tonumber(ARGV[1])

local r = redis.call('HMGET', KEYS[1], 'format', 'migrating', 'partitions', 'partitions.base', 'layout',
  'groups.concurrency', 'groups.limit', 'settings.version')
if r[2] then return redis.error_reply('DELAYQ_MIGRATING ' .. r[2]) end
if not r[1] then
  return redis.error_reply('DELAYQ_REPARTITION_REFUSED the queue has no config record yet: open it (a Queue call or a Worker) first')
end
local recorded = r[3] or '1'
for _, field in ipairs({ 'partitions', 'partitions.base' }) do
  local value = field == 'partitions' and recorded or r[4]
  if value and field_problem(field, value) then
    return redis.error_reply('DELAYQ_BAD_CONFIG ' .. KEYS[1] .. ' ' .. field .. ' ' .. string.gsub(value, '%c', '?') .. ' is not ' .. field_problem(field, value))
  end
end
local from = tonumber(recorded)
local base = r[4] or recorded
if r[5] and r[5] ~= 'zset' then
  return redis.error_reply('DELAYQ_REPARTITION_REFUSED layout ' .. r[5] .. ': a wheel queue has one ready list and cannot be partitioned')
end
if r[6] or r[7] then
  return redis.error_reply('DELAYQ_REPARTITION_REFUSED the queue records group bounds: re-partitioning a queue with groups is not supported')
end
if to < from then
  return redis.error_reply('DELAYQ_REPARTITION_REFUSED partitions ' .. to .. ' is below the recorded ' .. from .. ': shrinking is not supported (the jobs of the partitions dropped would be stranded)')
end
if to == from then return { from, from, tonumber(base), tonumber(r[8] or '0') } end
redis.call('HSET', KEYS[1], 'partitions', ARGV[1], 'partitions.base', base)
return { from, to, tonumber(base), redis.call('HINCRBY', KEYS[1], 'settings.version', 1) }
