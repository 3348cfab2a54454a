-- groups-list: a page of one queue's (partition's) groups, the biggest backlog first, with what
-- each holds (issue 29). Read in one step, so a row never mixes two moments.
--
-- KEYS[1] gn  ZSET group -> its waiting jobs (groups.lua keeps it with gq)
-- KEYS[2] gq  ZSET, scores 0: "<group>\0<due: 6 bytes BE><id>" of waiting grouped jobs
-- KEYS[3] gc  HASH group -> running count (+ GROUP_PAUSED while paused); "<group>\0l" rate buckets
-- ARGV[1] offset, ARGV[2] limit (whole numbers; limit 1..10000)
-- Returns: { groups with waiting jobs (ZCARD gn), then 5 per group: name, waiting, due, running,
--          paused (0/1) }. Order: most waiting first (ties: name, descending: ZREVRANGE), then
--          the groups with nothing waiting that have running jobs or are paused, by name.
-- Cost: O(log G + limit * log n) while the page is within the groups with waiting jobs (G of them:
--          no group's jobs are read, their count is gn's score, their due count one ZLEXCOUNT);
--          a page past them also reads gc's fields, O(running groups + paused + rate buckets).
--          Error 'DELAYQ_BAD_ARG <reason>' for KEYS other than these 3, an offset that is not a
--          whole number, a limit not 1..10000, or ARGV other than these 2 values.
-- Guarantee: read-only.

--!include prelude.lua
--!include args.lua
--!include groups.lua

local problem = check_key_count(3, false)
  or check_whole(ARGV[1], 'ARGV[1] offset', 0, 2 ^ 53 - 1)
  or check_whole(ARGV[2], 'ARGV[2] limit', 1, 10000)
  or check_arg_count(2, 'groups-list')
if problem then return bad_arg(problem) end
local K = { gn = KEYS[1], gq = KEYS[2], gc = KEYS[3] }
local offset, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
local now = now_ms()
local total = redis.call('ZCARD', K.gn)
local names, waiting = {}, {}
if offset < total then
  local page = redis.call('ZREVRANGE', K.gn, int_text(offset), int_text(offset + limit - 1), 'WITHSCORES')
  for i = 1, #page, 2 do
    names[#names + 1] = page[i]
    waiting[#names] = tonumber(page[i + 1])
  end
end
if #names < limit then
  -- Groups with nothing waiting but running jobs or a pause: gc's plain fields not in gn.
  local idle = {}
  for _, field in ipairs(redis.call('HKEYS', K.gc)) do
    if not string.find(field, '\0', 1, true) and not redis.call('ZSCORE', K.gn, field) then
      idle[#idle + 1] = field
    end
  end
  table.sort(idle)
  local skip = math.max(0, offset - total)
  for i = skip + 1, math.min(#idle, skip + limit - #names) do
    names[#names + 1] = idle[i]
    waiting[#names] = 0
  end
end
local out = { total }
if #names == 0 then return out end
local counts = redis.call('HMGET', K.gc, unpack(names))
-- A member due by now sorts before "<group>\0<now + 1>": the group's due jobs are a lex range.
local due_end = struct.pack('>I6', now + 1)
for i, g in ipairs(names) do
  local count = tonumber(counts[i]) or 0
  local paused = count >= GROUP_PAUSED
  if paused then count = count - GROUP_PAUSED end
  local due = waiting[i] > 0 and redis.call('ZLEXCOUNT', K.gq, '[' .. g .. '\0', '(' .. g .. '\0' .. due_end) or 0
  out[#out + 1] = g
  out[#out + 1] = waiting[i]
  out[#out + 1] = due
  out[#out + 1] = count
  out[#out + 1] = paused and 1 or 0
end
return out
