-- group-cancel: cancel up to `max` of one group's waiting jobs, its earliest first (issue 29). The
-- caller (src/operations/groups.ts) repeats it until the group has none left, so no call holds
-- Redis for longer than one chunk, however big the group.
--
-- KEYS[1] gq  ZSET, scores 0: "<group>\0<due: 6 bytes BE><id>" of waiting grouped jobs
-- KEYS[2] gw, KEYS[3] gr, KEYS[4] gc   group states and running counts (groups.lua)
-- KEYS[5] gn  ZSET group -> its waiting jobs
-- KEYS[6] j   HASH id -> record; each cancelled job keeps its cancelled record (record.lua rec_final)
-- KEYS[7] x   ZSET id -> cancelled at ms
-- KEYS[8] e   HASH id -> JSON of the last error (deleted: a cancelled job shows no error)
-- KEYS[9] n   HASH of counters (`cancelled`)
-- KEYS[10] ev STREAM of job events (`cancelled`, with was = waiting: always written)
-- ARGV[1] group, ARGV[2] max jobs this call (1..1000), ARGV[3] events cap (events.lua)
-- Returns: { cancelled by this call, the group's waiting jobs left }. Error 'DELAYQ_BAD_ARG
--          <reason>' (nothing written) for KEYS other than these 10 (of the types above), a group
--          that is empty, over 255 bytes, with a control character or not UTF-8, a max that is not
--          1..1000, an events cap that is not a whole number, or ARGV other than these 3 values.
-- Cost: O(max * log n); max is at most 1000, so one HMGET of the chunk's records fits Lua's stack.
-- Guarantee (docs/DESIGN.md invariant 8): each job cancelled here was waiting, leaves gq in this
--          step and is final: no claim can take it afterwards. Running jobs of the group are not
--          touched (queue.cancel(id) cancels one of those).

--!include prelude.lua
--!include args.lua
--!include events.lua
--!include record.lua
--!include groups.lua

-- Every check before the first write (docs/DESIGN.md invariant 10): the chunk's jobs leave gq and
-- land in j, x, e, n and ev in turn, so a key of another type found late would leave them half moved.
local problem = check_key_count(10, false)
  or check_group(ARGV[1], 'ARGV[1] group')
  or check_whole(ARGV[2], 'ARGV[2] max jobs', 1, 1000)
  or (check_events_cap(ARGV[3]) and 'ARGV[3] ' .. check_events_cap(ARGV[3]))
  or check_arg_count(3, 'group-cancel')
  -- gq gw gr, gc, gn, j, x, e, n, ev
  or check_key_types('zzzhzhzhhx', false)
if problem then return bad_arg(problem) end
local K = {
  gq = KEYS[1], gw = KEYS[2], gr = KEYS[3], gc = KEYS[4], gn = KEYS[5], j = KEYS[6], x = KEYS[7],
  e = KEYS[8], n = KEYS[9], ev = KEYS[10], events_cap = tonumber(ARGV[3]),
}
K.events = K.ev
local g = ARGV[1]
local max = tonumber(ARGV[2])

local now = now_ms()
local members = group_heads(K, g, 0, max)
if #members == 0 then return { 0, 0 } end
local ids, hset, zadd = {}, {}, {}
for i, member in ipairs(members) do ids[i] = group_member_id(g, member) end
local records = redis.call('HMGET', K.j, unpack(ids))
for i, id in ipairs(ids) do
  -- The cancelled record keeps the attempts used and max attempts, as cancel.lua's (rec_final);
  -- a record that cannot be read still ends cancelled: the user asked for the group's jobs to go.
  local rec = records[i]
  local h = rec and rec_parse(rec)
  hset[#hset + 1] = id
  hset[#hset + 1] = h and rec_final(rec, h, REC_B_CANCELLED)
    or string.char(REC_FORMAT, REC_A_MORE, REC_B_CANCELLED)
  zadd[#zadd + 1] = ms_text(now)
  zadd[#zadd + 1] = id
end
call_chunked('ZREM', K.gq, members, 1)
group_count(K, g, -#members)
call_chunked('HSET', K.j, hset, 2)
call_chunked('ZADD', K.x, zadd, 2)
call_chunked('HDEL', K.e, ids, 1)
redis.call('HINCRBY', K.n, 'cancelled', #members)
for _, id in ipairs(ids) do emit(K, 'cancelled', id, 'at', now, 'was', 'waiting') end
-- Its running jobs still hold slots; with none waiting the group leaves gw and gr.
group_refresh(K, g, now)
local from, to = group_range(g)
return { #members, redis.call('ZLEXCOUNT', K.gq, from, to) }
