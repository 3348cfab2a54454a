-- flow-deliver: apply the outbox entry of a flow's child that ended in another queue than its
-- parent's to the parent, once (docs/ARCHITECTURE.md §4.15; flow.lua). The scripts that end the
-- child have only its own queue's keys, so they leave the entry 'x\0<child>' in its queue's f and
-- publish 'F <parent's queue> <child>'; this script has both queues' keys (one Redis only: two
-- queues are two hash tags, which a Cluster puts in two slots).
--
-- KEYS[1] s, KEYS[2] p, KEYS[3] r   the parent's queue: waiting sets of the default and
--             prioritized classes (the parent goes there when its last child ended)
-- KEYS[4] gq, KEYS[5] gw, KEYS[6] gr, KEYS[7] gc   the parent's queue: groups (groups.lua)
-- KEYS[8] gn  ZSET group -> its waiting jobs (groups.lua keeps it with gq)
-- KEYS[9] j   HASH id -> record (the parent's queue)
-- KEYS[10] f  HASH flow bookkeeping of the parent's queue (flow.lua)
-- KEYS[11] fw ZSET parent -> its own due ms: parents waiting for their children
-- KEYS[12] w  the parent's queue's wake channel (the parent became due)
-- KEYS[13] n  HASH of counters (`dead`, when the child's failure kills the parent)
-- KEYS[14] ev STREAM of job events (`failed` for a parent a child failed)
-- KEYS[15] e  HASH id -> JSON of the last error (a parent a child failed: ChildFailedError)
-- KEYS[16] d  ZSET id -> died at ms (that parent is buried; no trim here: the next burial or
--             trim.lua does it)
-- KEYS[17] cf HASH flow bookkeeping of the child's queue: its outbox entry and its parent link
-- ARGV[1] the child's id, ARGV[2] the child's queue, ARGV[3] the parent's queue (as the child's
-- link names it), ARGV[4] the parent's queue's group concurrency (0..1000000; 0: unknown),
-- ARGV[5] the parent's queue's events cap (events.lua)
-- Returns: 'applied' (the parent counted the child: it may now wait by its class, or be dead),
--          'gone' (the parent no longer waits for its children: the entry is dropped), or 0 (an
--          integer reply) when there is no entry (delivered already). The entry and the child's
--          link are deleted in the same step, so a second call is a no-op: counted once.
--          Error 'DELAYQ_BAD_ARG <reason>' (nothing written) for a KEYS count other than 17, an
--          id that is not one, queue names missing, a link naming another parent queue than
--          ARGV[3], a group concurrency out of range or an events cap that is not a whole number.
-- Cost: one HMGET and one HDEL of cf; then what the same-queue count costs (flow.lua FLOW.count).

--!include prelude.lua
--!include events.lua
--!include record.lua
--!include wheel.lua
--!include place.lua
--!include bury.lua
--!include flow.lua
--!include args.lua

if #KEYS ~= 17 then return bad_arg('KEYS has ' .. #KEYS .. ' keys; flow-deliver takes 17') end
local id_problem = check_id(ARGV[1], 'ARGV[1] child id')
if id_problem then return bad_arg(id_problem) end
for i = 2, 3 do
  if type(ARGV[i]) ~= 'string' or not string.match(ARGV[i], '^[^%s%c{}]+$') then
    return bad_arg('ARGV[' .. i .. '] queue name ' .. tostring(ARGV[i]) .. ' is not a queue name')
  end
end
local problem = check_group_concurrency(ARGV[4], 'ARGV[4] group concurrency')
  or (check_events_cap(ARGV[5]) and 'ARGV[5] ' .. check_events_cap(ARGV[5]))
if problem then return bad_arg(problem) end

local K = {
  s = KEYS[1], p = KEYS[2], r = KEYS[3], gq = KEYS[4], gw = KEYS[5], gr = KEYS[6], gc = KEYS[7], gn = KEYS[8],
  j = KEYS[9], f = KEYS[10], fw = KEYS[11], w = KEYS[12], n = KEYS[13], ev = KEYS[14], e = KEYS[15], d = KEYS[16],
  events_cap = tonumber(ARGV[5]), gmax = tonumber(ARGV[4]),
}
K.events = K.ev
local cf, child, child_queue = KEYS[17], ARGV[1], ARGV[2]

local got = redis.call('HMGET', cf, 'x\0' .. child, 'c\0' .. child)
local mark, link = got[1], got[2]
if not mark then return 0 end
local parent, parent_queue = nil, nil
if link then parent, parent_queue = string.match(link, '^([^\1]+)\1(.+)$') end
if parent_queue and parent_queue ~= ARGV[3] then
  return bad_arg('the parent of ' .. child .. ' is in queue ' .. parent_queue .. ', not ' .. ARGV[3])
end
redis.call('HDEL', cf, 'x\0' .. child, 'c\0' .. child)
-- A link that names no other queue: the entry is stale (no script writes one then); dropped.
if not parent then return 'gone' end

local now = now_ms()
local kind = string.sub(mark, 1, 1)
local how, result = 'completed', nil
if kind == '1' then
  result = string.sub(mark, 2)
elseif kind == 'd' then
  how = 'dead'
elseif kind == 'c' then
  how = 'cancelled'
end
local entry = child .. '\1' .. child_queue
if FLOW.count(K, parent, entry, child, child_queue, how, result, now, 0, 0) then return 'applied' end
return 'gone'
