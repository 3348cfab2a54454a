-- migrate-end: finish `delayq migrate` (docs/ARCHITECTURE.md §10) once every partition is
-- sealed (migrate-seal.lua): the config record says format 2 and the mark goes, so layout-2
-- clients may open the queue; the legacy layout and partitions keys go (their values are in the
-- record since migrate-begin.lua).
--
-- KEYS[1] config      HASH the queue's config record, in the queue's own tag
-- KEYS[2] layout      STRING layout-1 key of the queue's own tag (before the config record)
-- KEYS[3] partitions  STRING layout-1 partition count (before the config record)
-- ARGV[1] mark: "<since ms>|<who>" as migrate-begin.lua returned it
-- Returns: now.
--          Error 'DELAYQ_MIGRATING <mark>' (nothing written) when the record's mark is not ARGV[1]:
--          another `delayq migrate --resume` took over, and it finishes. Error 'DELAYQ_BAD_ARG
--          <reason>' (nothing written) for KEYS other than these 3 (of the types above), or a mark
--          that is not "<since ms>|<who>".
-- Guarantee: only the run holding the mark lifts it, and format 2 and the lifted mark are one step:
--          no client sees the queue open before it is layout 2.

--!include prelude.lua
--!include args.lua

local problem = check_key_count(3, false) or check_key_types('hss', false)
if not problem and (type(ARGV[1]) ~= 'string' or not string.find(ARGV[1], '^%d+|[^%c]')) then
  problem = 'ARGV[1] mark ' .. tostring(ARGV[1]) .. ' is not "<since ms>|<who>" (what migrate-begin returned)'
end
problem = problem or check_arg_count(1, 'migrate-end')
if problem then return bad_arg(problem) end

local mark = redis.call('HGET', KEYS[1], 'migrating')
if mark ~= ARGV[1] then return redis.error_reply('DELAYQ_MIGRATING ' .. tostring(mark)) end
redis.call('HSET', KEYS[1], 'format', '2')
redis.call('HDEL', KEYS[1], 'migrating')
redis.call('DEL', KEYS[2], KEYS[3])
return now_ms()
