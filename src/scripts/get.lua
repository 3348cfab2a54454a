-- get: everything known about one job, read in one atomic step (docs/ARCHITECTURE.md §4.9).
--
-- KEYS[1] j   HASH id -> record          KEYS[2] s   ZSET waiting, default class
-- KEYS[3] p   ZSET prioritized, not due  KEYS[4] r   ZSET prioritized, due
-- KEYS[5] gq  ZSET grouped jobs          KEYS[6] a   ZSET lease member -> deadline
-- KEYS[7] c   ZSET completed             KEYS[8] x   ZSET cancelled
-- KEYS[9] d   ZSET dead                  KEYS[10] e  HASH id -> last error JSON
-- KEYS[11] wk HASH holder number -> "<worker id>|<started ms>"
-- KEYS[12] pg HASH id -> progress JSON
-- KEYS[13] f  HASH flow bookkeeping (flow.lua)
-- KEYS[14] fw ZSET parent -> its own due ms: flow parents waiting for their children
-- KEYS[15..17] wheel strategy only: wr, wi, wc (wheel.lua); a default-class job waits there
-- ARGV[1] id, ARGV[2] wheel strategy only: the granularity ms
-- Returns: false (nil) when the job is unknown; error 'DELAYQ_BAD_ARG <reason>' for a KEYS count
--          other than 14 (17 with the wheel) or an id that is missing, empty, over 1536 bytes, with
--          a control character or not UTF-8; else
--          { state, record, score, last error (JSON) or false, holder or false, progress or false,
--            lease member or false, flow parent id or false, the children's ids joined by '\0' or
--            false }
--          state 'waiting' (score = due), 'active' (score = lease deadline), 'completed' (completed at),
--          'cancelled' (cancelled at), 'dead' (died at),
--          'waiting-children' (a flow's parent whose children have not all ended; score = its
--          own due time). A flow's parent and children are known while its parent has not ended
--          (flow.lua forgets them then). The record is returned as stored (a
--          completed one carries the result when results are kept); the caller decodes it.
--          holder is the wk entry of the record's holder number: who holds (active) or held it.
--          An unreadable record is returned as 'dead' when it is in d, else as 'waiting' with the
--          score of s or -1: the caller's decode names what is wrong with it.
-- Guarantee: read-only; O(1) or O(log N), whatever the queue holds.

--!include record.lua
--!include wheel.lua
--!include place.lua
--!include args.lua

if #KEYS ~= 14 and #KEYS ~= 17 then return bad_arg('KEYS has ' .. #KEYS .. ' keys; get takes 14 (17 with the wheel: wr, wi, wc)') end
local id_problem = check_id(ARGV[1], 'ARGV[1] id')
if id_problem then return bad_arg(id_problem) end

local K = {
  j = KEYS[1], s = KEYS[2], p = KEYS[3], r = KEYS[4], gq = KEYS[5], a = KEYS[6], c = KEYS[7],
  x = KEYS[8], d = KEYS[9], e = KEYS[10], wk = KEYS[11], pg = KEYS[12], f = KEYS[13], fw = KEYS[14],
}
local bad = wheel_keys(K, 15, 2)
if bad then return redis.error_reply('DELAYQ_BAD_ARG ' .. bad) end
local id = ARGV[1]
local rec = redis.call('HGET', K.j, id)
if not rec then return false end

local function extras(h, member)
  local err = (h == nil or h.has_error) and redis.call('HGET', K.e, id) or false
  local holder = (h ~= nil and h.holder > 0) and redis.call('HGET', K.wk, tostring(h.holder)) or false
  local progress = member and redis.call('HGET', K.pg, id) or false
  return err, holder, progress
end

-- The job's flow links: its parent, and its children's ids. A completed child's record has no F
-- flag (a final record keeps only C and M), so they are read for every job: one HMGET.
local links = redis.call('HMGET', K.f, 'c\0' .. id, 'k\0' .. id)

local function answer(state, score, h, member)
  local err, holder, progress = extras(h, member)
  -- Numbers as whole decimals: tostring() would write 1.7672256e+12.
  if type(score) == 'number' then score = string.format('%.0f', score) end
  return { state, rec, score, err or false, holder or false, progress or false, member or false,
    links[1] or false, links[2] or false }
end

local h = rec_parse(rec)
if not h then
  local died = redis.call('ZSCORE', K.d, id)
  if died then return answer('dead', died, nil, nil) end
  return answer('waiting', redis.call('ZSCORE', K.s, id) or -1, nil, nil)
end

if h.completed then return answer('completed', redis.call('ZSCORE', K.c, id) or -1, h, nil) end
if h.cancelled then return answer('cancelled', redis.call('ZSCORE', K.x, id) or -1, h, nil) end
if h.claims > 0 then
  local member = rec_member(h, id)
  local deadline = redis.call('ZSCORE', K.a, member)
  if deadline then return answer('active', deadline, h, member) end
end
local died = redis.call('ZSCORE', K.d, id)
if died then return answer('dead', died, h, nil) end

-- A flow's parent waiting for its children: in fw, whatever its class.
if links[2] then
  local held = redis.call('ZSCORE', K.fw, id)
  if held then return answer('waiting-children', held, h, nil) end
end
-- Waiting: its class says which set holds it.
if h.group then return answer('waiting', h.group_due, h, nil) end
if h.prio ~= 0 then
  local member = prio_member(h.prio, id)
  local due = redis.call('ZSCORE', K.p, member)
  if due then return answer('waiting', due, h, nil) end
  local score = redis.call('ZSCORE', K.r, member)
  if score then return answer('waiting', tonumber(score) % PLACE_TWO42, h, nil) end
  return false
end
local due = redis.call('ZSCORE', K.s, id)
if due then return answer('waiting', due, h, nil) end
if K.wi then
  due = wheel_due(K, id)
  if due then return answer('waiting', due, h, nil) end
end
-- A record in no set: only between the scripts of a migration; nothing to show yet.
return false
