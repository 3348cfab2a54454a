-- add-flow: add a flow, a parent job and its children (and theirs), in one step, whole or nothing
-- (docs/ARCHITECTURE.md §4.15; flow.lua holds the bookkeeping). A job with children waits in fw
-- until every child ended, then by its class at its own due time (or then, if later); a job
-- without children waits by its class at once.
--
-- Every queue the flow's jobs are in gives one block of 14 KEYS, the parent's (the root's) queue
-- first; block q holds, from KEYS[14 * (q - 1) + 1]:
--   +1 s, +2 p, +3 r   the waiting sets of the default and prioritized classes
--   +4 gq, +5 gw, +6 gr, +7 gc   groups (groups.lua): a grouped child waits in gq
--   +8 gn  ZSET group -> its waiting jobs (groups.lua keeps it with gq)
--   +9 j   HASH id -> record
--   +10 f  HASH flow bookkeeping (flow.lua): the parents' pending counts, children and
--          onChildFailure, the children's parent links
--   +11 fw ZSET parent -> its own due ms: parents waiting for their children
--   +12 w  channel: wake messages (a child became the earliest waiting job)
--   +13 n  HASH of counters (`added`)
--   +14 ev STREAM of job events (`added`, with events 'all')
-- More than one block (children in another queue) only on one Redis: two queues are two hash
-- tags, which a Cluster puts in two slots no script can touch together (the caller refuses).
-- ARGV[1] elapsed: whole ms from the addFlow() call to the send (delays count from the call),
-- ARGV[2] Q queues (1..16, one KEYS block each), then 3 per queue: its name, its group
-- concurrency (the queue's recorded one, 0..1000000; 0: unknown), its events cap (events.lua);
-- then N jobs (1..1000), then 6 per job, a parent before its children:
-- id; when, 'd<ms>' (a delay from the call) or 'a<epoch ms>'; record (record.lua, with the F
-- flag, never claimed); parent, the 1-based index of an earlier job of this call, or 0 for the
-- flow's root (job 1, and only it); flags, '' or 'i' (as a parent: a child that dies or is
-- cancelled is ignored, where by default it makes the parent dead); queue, the 1-based index of
-- its queue (the root's is 1). Ids are unique in the whole flow, whatever their queues.
-- Returns: { due ms of each job }: a parent's is its own due time; it runs when its children have
--          all ended, and not before it. Error 'DELAYQ_FLOW_EXISTS <id>' when a job of that id
--          exists in its queue (in any state, or is remembered as completed); 'DELAYQ_BAD_ARG
--          <reason>' for a KEYS count other than 14 per queue (flows are not kept by the wheel
--          strategy), an argument out of its range, naming it, or a flow over its bounds: 1000
--          jobs, 500 children per parent, 8 levels. Any error means nothing was written.
-- Cost: TIME; per queue one HMGET j (existence), one HSET j, one HSET f, one ZADD fw for the
--          parents, one ZRANGE s and one ZADD s for the children of the default class, one HINCRBY
--          n, at most one PUBLISH w; each other child placed by its class (place.lua).
-- Guarantee: whole or nothing (docs/DESIGN.md invariant 11): every argument and every id is
--          checked before the first write. One queue: every key is in its hash tag, one slot.
--          Several: one script call on one Redis, so still one atomic step.

--!include prelude.lua
--!include events.lua
--!include record.lua
--!include wheel.lua
--!include place.lua
--!include args.lua

-- The flow's bounds, one table (the EVAL chunk's locals are few): jobs per call, children per
-- parent, levels (the root is level 1), queues per call.
local FLOW_BOUNDS = { jobs = 1000, children = 500, levels = 8, queues = 16 }

if not whole_ms(ARGV[1]) or #ARGV[1] > 12 then return bad_arg('ARGV[1] elapsed ' .. tostring(ARGV[1]) .. ' is not whole ms >= 0') end
local nq = whole_ms(ARGV[2]) and #ARGV[2] <= 2 and tonumber(ARGV[2]) or nil
if not nq or nq < 1 or nq > FLOW_BOUNDS.queues then
  return bad_arg('ARGV[2] Q ' .. tostring(ARGV[2]) .. ' is not a whole number of queues from 1 to ' .. FLOW_BOUNDS.queues)
end
if #KEYS ~= 14 * nq then
  return bad_arg('KEYS has ' .. #KEYS .. ' keys; add-flow takes 14 per queue, ' .. (14 * nq) .. ' for ' .. nq .. ' (flows are not kept by the wheel strategy)')
end
-- Each queue's keys, as the includes take them (K.s, K.j, ...), and its settings.
local Q, names = {}, {}
for q = 1, nq do
  local at, base = 2 + 3 * (q - 1), 14 * (q - 1)
  local name = ARGV[at + 1]
  if type(name) ~= 'string' or not string.match(name, '^[^%s%c{}]+$') or #name > 200 then
    return bad_arg('ARGV[' .. (at + 1) .. '] queue name ' .. tostring(name) .. ' is not a queue name')
  end
  if names[name] then return bad_arg('queue ' .. name .. ' is given twice') end
  names[name] = q
  local problem = check_group_concurrency(ARGV[at + 2], 'ARGV[' .. (at + 2) .. '] group concurrency')
    or (check_events_cap(ARGV[at + 3]) and 'ARGV[' .. (at + 3) .. '] ' .. check_events_cap(ARGV[at + 3]))
  if problem then return bad_arg(problem) end
  Q[q] = {
    s = KEYS[base + 1], p = KEYS[base + 2], r = KEYS[base + 3], gq = KEYS[base + 4], gw = KEYS[base + 5],
    gr = KEYS[base + 6], gc = KEYS[base + 7], gn = KEYS[base + 8], j = KEYS[base + 9], f = KEYS[base + 10],
    fw = KEYS[base + 11], w = KEYS[base + 12], n = KEYS[base + 13], ev = KEYS[base + 14],
    events = KEYS[base + 14], events_cap = tonumber(ARGV[at + 3]), gmax = tonumber(ARGV[at + 2]), name = name,
  }
end
local first = 3 + 3 * nq
local n = whole_ms(ARGV[first]) and #ARGV[first] <= 4 and tonumber(ARGV[first]) or nil
if not n or n < 1 or n > FLOW_BOUNDS.jobs then
  return bad_arg('ARGV[' .. first .. '] N ' .. tostring(ARGV[first]) .. ' is not a whole number of jobs from 1 to ' .. FLOW_BOUNDS.jobs)
end
if #ARGV ~= first + 6 * n then return bad_arg('ARGV has ' .. #ARGV .. ' values; ' .. nq .. ' queues and N = ' .. n .. ' jobs need ' .. (first + 6 * n)) end

local now = now_ms()
local called = now - tonumber(ARGV[1])

-- Every job read and checked; nothing written yet.
local ids, recs, heads, dues, parents, levels, kids, seen, qs, flags_of = {}, {}, {}, {}, {}, {}, {}, {}, {}, {}
for i = 1, n do
  local at = first + 1 + 6 * (i - 1)
  local id, when, rec, parent_text, flags, q_text = ARGV[at], ARGV[at + 1], ARGV[at + 2], ARGV[at + 3], ARGV[at + 4], ARGV[at + 5]
  local what = 'job ' .. i .. ' of ' .. n .. ': '
  local id_problem = check_id(id, 'id')
  if id_problem then return bad_arg(what .. id_problem) end
  if seen[id] then return bad_arg(what .. 'id ' .. id .. ' appears twice in the flow') end
  seen[id] = true
  local q = whole_ms(q_text) and #q_text <= 2 and tonumber(q_text) or nil
  if not q or q < 1 or q > nq or (i == 1 and q ~= 1) then
    return bad_arg(what .. 'queue ' .. tostring(q_text) .. ' is not 1..' .. nq .. ' (the root is in queue 1)')
  end
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
    -- A child in another queue is named with its queue (flow.lua).
    list[#list + 1] = q == qs[parent] and id or (id .. '\1' .. Q[q].name)
    if #list > FLOW_BOUNDS.children then
      return bad_arg(what .. 'job ' .. parent .. ' has more than ' .. FLOW_BOUNDS.children .. ' children')
    end
  end
  if flags ~= '' and flags ~= 'i' then return bad_arg(what .. "flags " .. tostring(flags) .. " are not '' or 'i'") end
  ids[i], recs[i], heads[i], dues[i], parents[i], qs[i], flags_of[i] = id, rec, h, due, parent, q, flags
end
for q = 1, nq do
  local mine = {}
  for i = 1, n do
    if qs[i] == q then mine[#mine + 1] = ids[i] end
  end
  if #mine > 0 then
    local existing = redis.call('HMGET', Q[q].j, unpack(mine))
    for k = 1, #mine do
      if existing[k] then return redis.error_reply('DELAYQ_FLOW_EXISTS ' .. mine[k]) end
    end
  end
end

-- The writes, queue by queue: records, bookkeeping, then each job where it waits.
local out = {}
for q = 1, nq do
  local K = Q[q]
  local records, fields, count = {}, {}, 0
  for i = 1, n do
    if qs[i] == q then
      count = count + 1
      records[#records + 1] = ids[i]
      records[#records + 1] = recs[i]
      if i > 1 then
        local pq = qs[parents[i]]
        fields[#fields + 1] = 'c\0' .. ids[i]
        fields[#fields + 1] = pq == q and ids[parents[i]] or (ids[parents[i]] .. '\1' .. Q[pq].name)
      end
      if kids[i] then
        fields[#fields + 1] = 'p\0' .. ids[i]
        fields[#fields + 1] = #kids[i]
        fields[#fields + 1] = 'k\0' .. ids[i]
        fields[#fields + 1] = table.concat(kids[i], '\0')
        if flags_of[i] == 'i' then
          fields[#fields + 1] = 'o\0' .. ids[i]
          fields[#fields + 1] = 'i'
        end
      end
    end
  end
  if count > 0 then
    call_chunked('HSET', K.j, records, 2)
    if #fields > 0 then call_chunked('HSET', K.f, fields, 2) end
    -- Parents into fw, and children of the default class into s, one ZADD each for the queue;
    -- the others (prioritized, grouped) by their class, one at a time.
    local wake = nil
    local held, plain, plain_first = {}, {}, nil
    for i = 1, n do
      if qs[i] == q then
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
    end
    if #held > 0 then call_chunked('ZADD', K.fw, held, 2) end
    if plain_first then
      local head = redis.call('ZRANGE', K.s, 0, 0, 'WITHSCORES')
      call_chunked('ZADD', K.s, plain, 2)
      if (head[2] == nil or plain_first < tonumber(head[2])) and (wake == nil or plain_first < wake) then wake = plain_first end
    end
    redis.call('HINCRBY', K.n, 'added', count)
    if wake then redis.call('PUBLISH', K.w, string.format('%.0f', wake)) end
  end
end
return out
