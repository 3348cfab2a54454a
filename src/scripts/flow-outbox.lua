-- flow-outbox: list a queue's flow outbox entries, children of this queue that ended while their
-- parent is in another queue, not delivered yet (flow.lua; flow-deliver.lua applies each). For
-- the sweep a worker makes at start, after a reconnect and with its periodic trim, and a Queue
-- with cancel: an entry whose 'F' wake message no worker heard (none listened, or the one that
-- did stopped before delivering) is delivered then.
--
-- KEYS[1] f   HASH flow bookkeeping (flow.lua): 'x\0<child>' -> how it ended, 'c\0<child>' ->
--             '<parent>\1<parent's queue>'
-- ARGV[1] HSCAN cursor ('0' to start), ARGV[2] COUNT hint (1..1000)
-- Returns: { next cursor ('0': the scan is done), then for each entry found: the child's id, the
--          parent's queue ('' when its link is gone) }. An entry may be listed twice over a scan
--          (HSCAN's own guarantee); delivering it twice is a no-op.
--          Error 'DELAYQ_BAD_ARG <reason>' for a KEYS count other than 1, a cursor that is not a
--          whole number or a count out of range.
-- Cost: one HSCAN of f (MATCH 'x\0*', bounded by the count) and one HMGET of the links found.
-- Read only.

--!include args.lua

if #KEYS ~= 1 then return bad_arg('KEYS has ' .. #KEYS .. ' keys; flow-outbox takes 1 (f)') end
if not whole_ms(ARGV[1]) or #ARGV[1] > 20 then return bad_arg('ARGV[1] cursor ' .. tostring(ARGV[1]) .. ' is not a whole number') end
local count = whole_ms(ARGV[2]) and #ARGV[2] <= 4 and tonumber(ARGV[2]) or nil
if not count or count < 1 or count > 1000 then return bad_arg('ARGV[2] count ' .. tostring(ARGV[2]) .. ' is not 1..1000') end

local page = redis.call('HSCAN', KEYS[1], ARGV[1], 'MATCH', 'x\0*', 'COUNT', count)
local out = { page[1] }
local kids, links = {}, {}
for i = 1, #page[2], 2 do
  local kid = string.sub(page[2][i], 3)
  kids[#kids + 1] = kid
  links[#links + 1] = 'c\0' .. kid
end
if #kids == 0 then return out end
local found = redis.call('HMGET', KEYS[1], unpack(links))
for i, kid in ipairs(kids) do
  out[#out + 1] = kid
  out[#out + 1] = found[i] and string.match(found[i], '\1(.+)$') or ''
end
return out
