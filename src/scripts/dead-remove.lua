-- dead-remove: delete a dead job for good (layout 2, docs/ARCHITECTURE.md §4.9).
--
-- KEYS[1] d   ZSET id -> died at ms
-- KEYS[2] j   HASH id -> record
-- KEYS[3] e   HASH id -> JSON of the last error
-- KEYS[4] lg  optional: HASH id -> the job's log lines (log.lua), deleted with the record
-- ARGV[1] id
-- Returns: 1 when removed; 0 when the job is not dead (nothing written).
-- Guarantee: only a dead job's record is deleted; a waiting, running or finished job with the
--          same id is never touched.

--!include args.lua

if #KEYS ~= 3 and #KEYS ~= 4 then
  return bad_arg('KEYS has ' .. #KEYS .. ' keys; dead-remove takes 3 (d, j, e) or 4 (then lg)')
end
local id_problem = check_id(ARGV[1], 'ARGV[1] id')
if id_problem then return bad_arg(id_problem) end
local id = ARGV[1]
if redis.call('ZREM', KEYS[1], id) == 0 then return 0 end
redis.call('HDEL', KEYS[2], id)
redis.call('HDEL', KEYS[3], id)
if KEYS[4] then redis.call('HDEL', KEYS[4], id) end
return 1
