-- child-results: what the children of a flow's parent ended with, for job.childResults() in the
-- parent's handler (docs/ARCHITECTURE.md §4.15; flow.lua keeps these fields).
--
-- KEYS[1] f  HASH flow bookkeeping (flow.lua)
-- ARGV[1] the parent's id
-- Returns: { child id, how it ended, ... } for each child of the parent, in the order the flow
--          named them: '1' and the codec's bytes of its result; '0' completed with no result;
--          '-' ended otherwise (died or was cancelled, and the parent ignores that); false: not
--          ended. Empty when the id is no flow's live parent (unknown, not a parent, or ended).
--          Error 'DELAYQ_BAD_ARG <reason>' for a KEYS count other than 1 or an id that is
--          missing, empty, over 1536 bytes, with a control character or not UTF-8.
-- Cost: one HGET and one HMGET of f. Read only.

--!include args.lua

if #KEYS ~= 1 then return bad_arg('KEYS has ' .. #KEYS .. ' keys; child-results takes 1 (f)') end
local id_problem = check_id(ARGV[1], 'ARGV[1] id')
if id_problem then return bad_arg(id_problem) end

local kids = redis.call('HGET', KEYS[1], 'k\0' .. ARGV[1])
if not kids then return {} end
local ids, fields = {}, {}
for kid in string.gmatch(kids, '[^%z]+') do
  ids[#ids + 1] = kid
  fields[#fields + 1] = 'r\0' .. kid
end
local marks = redis.call('HMGET', KEYS[1], unpack(fields))
local out = {}
for i, kid in ipairs(ids) do
  out[#out + 1] = kid
  out[#out + 1] = marks[i] or false
end
return out
