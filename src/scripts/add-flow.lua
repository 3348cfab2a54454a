-- add-flow: add a flow, a parent job and its children (and theirs), in one step, whole or nothing
-- (docs/ARCHITECTURE.md §4.15; flow.lua holds the bookkeeping). A job with children waits in fw
-- until every child ended, then by its class at its own due time (or then, if later); a job
-- without children waits by its class at once.
--
-- KEYS[1] s, KEYS[2] p, KEYS[3] r   the waiting sets of the default and prioritized classes
-- KEYS[4] gq, KEYS[5] gw, KEYS[6] gr, KEYS[7] gc   groups (groups.lua): a grouped child waits in gq
-- KEYS[8] gn  ZSET group -> its waiting jobs (groups.lua keeps it with gq)
-- KEYS[9] j   HASH id -> record
-- KEYS[10] f  HASH flow bookkeeping (flow.lua): the parents' pending counts, children and
--             onChildFailure, the children's parent links
-- KEYS[11] fw ZSET parent -> its own due ms: parents waiting for their children
-- KEYS[12] w  channel: wake messages (a child became the earliest waiting job)
-- KEYS[13] n  HASH of counters (`added`)
-- KEYS[14] ev STREAM of job events (`added`, with events 'all')
-- ARGV[1] elapsed: whole ms from the addFlow() call to the send (delays count from the call),
-- ARGV[2] group concurrency (the queue's recorded one, 0..1000000; 0: unknown), ARGV[3] events
-- cap (events.lua), ARGV[4] N jobs (1..1000), then 5 per job, a parent before its children:
-- id; when, 'd<ms>' (a delay from the call) or 'a<epoch ms>'; record (record.lua, with the F
-- flag, never claimed); parent, the 1-based index of an earlier job of this call, or 0 for the
-- flow's root (job 1, and only it); flags, '' or 'i' (as a parent: a child that dies or is
-- cancelled is ignored, where by default it makes the parent dead).
-- Returns: { due ms of each job }: a parent's is its own due time; it runs when its children have
--          all ended, and not before it. Error 'DELAYQ_FLOW_EXISTS <id>' when a job of that id
--          exists (in any state, or is remembered as completed); 'DELAYQ_BAD_ARG <reason>' for a
--          KEYS count other than 14 (flows are not kept by the wheel strategy), an argument out
--          of its range, naming it, or a flow over its bounds: 1000 jobs, 500 children per
--          parent, 8 levels. Any error means nothing was written.
-- Cost: TIME, one HMGET j (existence), one HSET j, one HSET f, one ZADD fw for the parents, one
--          ZRANGE s and one ZADD s for the children of the default class, each other child placed
--          by its class (place.lua), one HINCRBY n, at most one PUBLISH w.
-- Guarantee: whole or nothing (docs/DESIGN.md invariant 11): every argument and every id is
--          checked before the first write. Every key is in the queue's hash tag: one slot.

--!include prelude.lua
--!include events.lua
--!include record.lua
--!include wheel.lua
--!include place.lua
--!include args.lua

-- The flow's bounds, one table (the EVAL chunk's locals are few): jobs per call, children per
-- parent, levels (the root is level 1).
local FLOW_BOUNDS = { jobs = 1000, children = 500, levels = 8 }

if #KEYS ~= 14 then
  return bad_arg('KEYS has ' .. #KEYS .. ' keys; add-flow takes 14 (flows are not kept by the wheel strategy)')
end
if not whole_ms(ARGV[1]) or #ARGV[1] > 12 then return bad_arg('ARGV[1] elapsed ' .. tostring(ARGV[1]) .. ' is not whole ms >= 0') end
local problem = check_group_concurrency(ARGV[2], 'ARGV[2] group concurrency') or (check_events_cap(ARGV[3]) and 'ARGV[3] ' .. check_events_cap(ARGV[3]))
if problem then return bad_arg(problem) end
local n = whole_ms(ARGV[4]) and #ARGV[4] <= 4 and tonumber(ARGV[4]) or nil
if not n or n < 1 or n > FLOW_BOUNDS.jobs then
  return bad_arg('ARGV[4] N ' .. tostring(ARGV[4]) .. ' is not a whole number of jobs from 1 to ' .. FLOW_BOUNDS.jobs)
end
if #ARGV ~= 4 + 5 * n then return bad_arg('ARGV has ' .. #ARGV .. ' values; N = ' .. n .. ' jobs need ' .. (4 + 5 * n)) end

local K = {
  s = KEYS[1], p = KEYS[2], r = KEYS[3], gq = KEYS[4], gw = KEYS[5], gr = KEYS[6], gc = KEYS[7], gn = KEYS[8],
  j = KEYS[9], f = KEYS[10], fw = KEYS[11], w = KEYS[12], n = KEYS[13], ev = KEYS[14],
  events_cap = tonumber(ARGV[3]), gmax = tonumber(ARGV[2]),
}
K.events = K.ev
local now = now_ms()
local called = now - tonumber(ARGV[1])

-- Every job read and checked; nothing written yet.
local ids, recs, heads, dues, parents, levels, kids, seen = {}, {}, {}, {}, {}, {}, {}, {}
for i = 1, n do
  local at = 5 + 5 * (i - 1)
  local id, when, rec, parent_text, flags = ARGV[at], ARGV[at + 1], ARGV[at + 2], ARGV[at + 3], ARGV[at + 4]
  local what = 'job ' .. i .. ' of ' .. n .. ': '
  local id_problem = check_id(id, 'id')
  if id_problem then return bad_arg(what .. id_problem) end
  if seen[id] then return bad_arg(what .. 'id ' .. id .. ' appears twice in the flow') end
  seen[id] = true
  local kind, amount = string.match(when or '', '^([da])(%d+)$')
  if not kind or #amount > 15 then return bad_arg(what .. 'when ' .. tostring(when) .. ' is not d<ms> or a<epoch ms>') end
  local due = kind == 'd' and called + tonumber(amount) or tonumber(amount)
  if due < MIN_DUE_MS or due > MAX_DUE_MS then return bad_arg(what .. 'due time ' .. string.format('%.0f', due) .. ' is out of range') end
  local h, why = nil, 'is missing'
  if type(rec) == 'string' then h, why = rec_parse(rec) end
  if not h then return bad_arg(what .. 'record ' .. tostring(why)) end
  if h.claims > 0 or h.completed or h.cancelled or h.has_error or bit.band(h.fb, 0x40) == 0 then
    return bad_arg(what .. 'record is not a new flow job (flags B must have F 0x40; no claim block, E, D or Q)')
  end
  local parent = whole_ms(parent_text) and #parent_text <= 4 and tonumber(parent_text) or nil
  if i == 1 then
    if parent ~= 0 then return bad_arg(what .. 'parent ' .. tostring(parent_text) .. ' must be 0: job 1 is the root') end
    levels[i] = 1
  else
    if not parent or parent < 1 or parent >= i then
      return bad_arg(what .. 'parent ' .. tostring(parent_text) .. ' is not the index of an earlier job (1..' .. (i - 1) .. ')')
    end
    levels[i] = levels[parent] + 1
    if levels[i] > FLOW_BOUNDS.levels then
      return bad_arg(what .. 'the flow is deeper than ' .. FLOW_BOUNDS.levels .. ' levels')
    end
    kids[parent] = kids[parent] or {}
    local list = kids[parent]
    list[#list + 1] = id
    if #list > FLOW_BOUNDS.children then
      return bad_arg(what .. 'job ' .. parent .. ' has more than ' .. FLOW_BOUNDS.children .. ' children')
    end
  end
  if flags ~= '' and flags ~= 'i' then return bad_arg(what .. "flags " .. tostring(flags) .. " are not '' or 'i'") end
  ids[i], recs[i], heads[i], dues[i], parents[i] = id, rec, h, due, parent
end
local existing = redis.call('HMGET', K.j, unpack(ids))
for i = 1, n do
  if existing[i] then return redis.error_reply('DELAYQ_FLOW_EXISTS ' .. ids[i]) end
end

-- The writes: records, bookkeeping, then each job where it waits.
local records, fields = {}, {}
for i = 1, n do
  records[#records + 1] = ids[i]
  records[#records + 1] = recs[i]
  if i > 1 then
    fields[#fields + 1] = 'c\0' .. ids[i]
    fields[#fields + 1] = ids[parents[i]]
  end
  if kids[i] then
    fields[#fields + 1] = 'p\0' .. ids[i]
    fields[#fields + 1] = #kids[i]
    fields[#fields + 1] = 'k\0' .. ids[i]
    fields[#fields + 1] = table.concat(kids[i], '\0')
    if ARGV[5 + 5 * (i - 1) + 4] == 'i' then
      fields[#fields + 1] = 'o\0' .. ids[i]
      fields[#fields + 1] = 'i'
    end
  end
end
call_chunked('HSET', K.j, records, 2)
if #fields > 0 then call_chunked('HSET', K.f, fields, 2) end
-- Parents into fw, and children of the default class into s, one ZADD each for the flow; the
-- others (prioritized, grouped) by their class, one at a time.
local wake = nil
local out, held, plain, plain_first = {}, {}, {}, nil
for i = 1, n do
  local due = dues[i]
  if kids[i] then
    held[#held + 1] = due
    held[#held + 1] = ids[i]
  elseif heads[i].prio == 0 and not heads[i].group then
    plain[#plain + 1] = due
    plain[#plain + 1] = ids[i]
    if plain_first == nil or due < plain_first then plain_first = due end
  elseif place_waiting(K, ids[i], heads[i], due, now) and (wake == nil or due < wake) then
    wake = due
  end
  out[i] = string.format('%.0f', due)
  emit(K, 'added', ids[i], 'at', now)
end
call_chunked('ZADD', K.fw, held, 2)
if plain_first then
  local head = redis.call('ZRANGE', K.s, 0, 0, 'WITHSCORES')
  call_chunked('ZADD', K.s, plain, 2)
  if (head[2] == nil or plain_first < tonumber(head[2])) and (wake == nil or plain_first < wake) then wake = plain_first end
end
redis.call('HINCRBY', K.n, 'added', n)
if wake then redis.call('PUBLISH', K.w, string.format('%.0f', wake)) end
return out
