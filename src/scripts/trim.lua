-- trim: keep the finished jobs within their retention, and forget workers long gone (layout 2,
-- docs/ARCHITECTURE.md §4.9). Run by every worker's Reaper duty (about once a second while it
-- finishes jobs, else once a minute: src/worker/reaper.ts); the hot path never trims.
--
-- KEYS[1] c   ZSET id -> completed at ms (the completed record stays in j while the id is here)
-- KEYS[2] x   ZSET id -> cancelled at ms (the cancelled record stays in j while the id is here)
-- KEYS[3] d   ZSET id -> died at ms (the full record stays in j, the error in e)
-- KEYS[4] j   HASH id -> record
-- KEYS[5] e   HASH id -> JSON of the last error
-- KEYS[6] wk  HASH holder number -> "<worker id>|<started ms>"; field '#' = the last number
--             issued; field "<number>@" = when that worker last trimmed (it is alive), epoch ms
-- KEYS[7] lg  optional: HASH id -> the job's log lines (log.lua); field "\0" = the sweep's HSCAN
--             cursor. A trimmed job's lines go with its record; and each call looks at up to
--             LOG_SWEEP more of lg's entries, dropping those whose record is gone (deleted by a
--             script that does not take lg: the dead set bounded at a burial in claim, fail or
--             reap), so every job's lines go at most one pass of lg after its record.
-- ARGV[1] completed max count, ARGV[2] completed max age ms, ARGV[3] cancelled max count,
-- ARGV[4] cancelled max age ms, ARGV[5] dead max count, ARGV[6] dead max age ms (a count or
-- age of 0: no bound of that kind), ARGV[7] max ids per set and call, ARGV[8] worker entry max
-- age ms (0: keep every entry), ARGV[9] the calling worker's holder number in this queue
-- (partition), or 0 when the caller is not a worker
-- Returns: { completed trimmed, cancelled trimmed, dead trimmed, worker entries dropped, log
--          entries the sweep dropped }
-- Guarantee: only finished jobs are deleted: a completed or cancelled id's record is deleted only
--          while it still is the completed or cancelled record (so an id added again since is
--          never touched); at most ARGV[7] ids per set and call, oldest first, so a call stays
--          short and a backlog goes over the next runs. A worker's entry is dropped only once
--          neither its start nor its last trim (every worker trims about once a second) is within
--          the age, so a live worker keeps its entry however long it runs.

--!include prelude.lua
--!include record.lua
--!include args.lua

if #KEYS ~= 6 and #KEYS ~= 7 then
  return bad_arg('KEYS has ' .. #KEYS .. ' keys; trim takes 6 (c, x, d, j, e, wk) or 7 (then lg)')
end
local K = { c = KEYS[1], x = KEYS[2], d = KEYS[3], j = KEYS[4], e = KEYS[5], wk = KEYS[6], lg = KEYS[7] }
-- lg entries the sweep looks at per call: HSCAN returns the values too (Redis before 7.4 has no
-- NOVALUES), at most 50 lines each.
local LOG_SWEEP = 50
for i = 1, 9 do
  if not whole_ms(ARGV[i]) or #ARGV[i] > 15 then
    return bad_arg('argument ' .. i .. ' (' .. tostring(ARGV[i]) .. ') is not a whole number >= 0')
  end
end
local max_per_call = tonumber(ARGV[7])
local now = now_ms()

-- The ids of `key` beyond `max_count` or older than `max_age_ms`, oldest first, at most
-- max_per_call of them.
local function expired(key, max_count, max_age_ms)
  local ids = {}
  if max_age_ms > 0 then
    ids = redis.call('ZRANGEBYSCORE', key, '-inf', '(' .. string.format('%.0f', now - max_age_ms),
      'LIMIT', 0, max_per_call)
  end
  if max_count > 0 and #ids < max_per_call then
    local excess = redis.call('ZCARD', key) - #ids - max_count
    if excess > 0 then
      ids = redis.call('ZRANGE', key, 0, #ids + math.min(excess, max_per_call - #ids) - 1)
    end
  end
  return ids
end

-- Finished records (completed or cancelled) of `key`: the entry goes, and the record with it
-- while it is still the finished one.
local function trim_finished(key, max_count, max_age_ms, is_final)
  local ids = expired(key, max_count, max_age_ms)
  if #ids == 0 then return 0 end
  redis.call('ZREM', key, unpack(ids))
  local recs = redis.call('HMGET', K.j, unpack(ids))
  local drop = {}
  for i, id in ipairs(ids) do
    local h = recs[i] and rec_parse(recs[i])
    if h and is_final(h) then drop[#drop + 1] = id end
  end
  if #drop > 0 then
    redis.call('HDEL', K.j, unpack(drop))
    if K.lg then redis.call('HDEL', K.lg, unpack(drop)) end
  end
  return #ids
end

local completed = trim_finished(K.c, tonumber(ARGV[1]), tonumber(ARGV[2]), function(h) return h.completed end)
local cancelled = trim_finished(K.x, tonumber(ARGV[3]), tonumber(ARGV[4]), function(h) return h.cancelled end)

-- Dead jobs: while the id is in d, its record in j is the dead job's.
local dead_ids = expired(K.d, tonumber(ARGV[5]), tonumber(ARGV[6]))
if #dead_ids > 0 then
  redis.call('ZREM', K.d, unpack(dead_ids))
  redis.call('HDEL', K.j, unpack(dead_ids))
  redis.call('HDEL', K.e, unpack(dead_ids))
  if K.lg then redis.call('HDEL', K.lg, unpack(dead_ids)) end
end

-- The log sweep: lines whose record is gone. A queue that never logged pays one EXISTS.
local logs_swept = 0
if K.lg and redis.call('EXISTS', K.lg) == 1 then
  local page = redis.call('HSCAN', K.lg, redis.call('HGET', K.lg, '\0') or '0', 'COUNT', LOG_SWEEP)
  local gone = {}
  for i = 1, #page[2], 2 do
    local id = page[2][i]
    if id ~= '\0' and redis.call('HEXISTS', K.j, id) == 0 then gone[#gone + 1] = id end
  end
  if #gone > 0 then redis.call('HDEL', K.lg, unpack(gone)) end
  logs_swept = #gone
  if page[1] == '0' then
    redis.call('HDEL', K.lg, '\0')
  else
    redis.call('HSET', K.lg, '\0', page[1])
  end
end

-- Worker entries: a closed worker drops its own; one that crashed is forgotten after the age.
-- The caller, a live worker, says so first.
local caller = ARGV[9]
if caller ~= '0' and redis.call('HEXISTS', K.wk, caller) == 1 then
  redis.call('HSET', K.wk, caller .. '@', string.format('%.0f', now))
end
local workers = 0
local worker_age = tonumber(ARGV[8])
if worker_age > 0 then
  local entries = redis.call('HGETALL', K.wk)
  local started, seen = {}, {}
  for i = 1, #entries, 2 do
    local field, value = entries[i], entries[i + 1]
    local number = string.match(field, '^(%d+)@$')
    if number then
      seen[number] = tonumber(value)
    elseif field ~= '#' then
      started[field] = tonumber(string.match(value, '|(%d+)$')) or 0
    end
  end
  local gone = {}
  for number, at in pairs(started) do
    local last = math.max(at, seen[number] or 0)
    if last < now - worker_age then
      gone[#gone + 1] = number
      gone[#gone + 1] = number .. '@'
      workers = workers + 1
    end
  end
  -- A liveness mark whose entry was dropped (the worker closed) goes too.
  for number in pairs(seen) do
    if not started[number] then gone[#gone + 1] = number .. '@' end
  end
  if #gone > 0 then redis.call('HDEL', K.wk, unpack(gone)) end
end
return { completed, cancelled, #dead_ids, workers, logs_swept }
