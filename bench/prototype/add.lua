-- add (prototype of layout 2, docs/ARCHITECTURE.md §4.1): accept N jobs; an existing id is left
-- untouched. The client sends each job's whole record (header + encoded payload, §3) ready to
-- store: the script neither parses nor rebuilds it, so a job costs Lua no string work.
--
-- KEYS[1] s   ZSET id -> due ms: waiting jobs of the default class (no priority, no group)
-- KEYS[2] p   ZSET "<prio>:<id>" -> due ms: waiting prioritized jobs, not yet due
-- KEYS[3] r   ZSET "<prio>:<id>" -> (prio + 1024) * 2^42 + due: due prioritized jobs
-- KEYS[4] j   HASH id -> record
-- KEYS[5] c   ZSET id -> completed at ms (recently completed jobs, whose completed record is
--             still in j: a resent add finds it there and writes nothing)
-- KEYS[6] w   channel: the head of s moved earlier
-- KEYS[7] n   HASH of counters (`added`)
-- KEYS[8] gq  ZSET, all scores 0: "<group>\0<due: 6 bytes BE><id>" of waiting grouped jobs
-- KEYS[9] gw  ZSET group -> due ms of its head: groups with a free slot, head not due
-- KEYS[10] gr ZSET group -> turn: groups with a free slot and a due head
-- KEYS[11] gc HASH group -> running count
-- ARGV[1] N, ARGV[2] ms between the add() call and the send (measured by the client, monotonic
--         clock, rounded down), ARGV[3] group concurrency, then 4 per job: id, kind, value,
--         record. kind 'd' = value is a delay counted from the add() call, 'a' = value is an
--         absolute epoch ms; 'D<prio>' and 'A<prio>' the same for a job with a priority (its
--         record's header says so too); 'G<group>' a delay, for a grouped job whose record's
--         header is exactly format, flags 0x10 and the G block (the script writes its due time).
-- Returns: { created_1, run_at_1, ... }: created 1; 0 when the id exists (nothing written; run_at
--          is -1 in this prototype); 2 when the id completed recently (run_at = completed at; the
--          design's reply has more states, docs/ARCHITECTURE.md §4.1).
-- Guarantee: the due time of a delayed job is counted from the server clock minus the time the
--          call spent before it was sent: never earlier than the caller asked (docs/ARCHITECTURE.md §6.3).

if redis.replicate_commands then redis.replicate_commands() end

local K = {
  s = KEYS[1], p = KEYS[2], r = KEYS[3], j = KEYS[4], c = KEYS[5], w = KEYS[6], n = KEYS[7],
  gq = KEYS[8], gw = KEYS[9], gr = KEYS[10], gc = KEYS[11],
}
local TWO42, PRIO_BASE = 4398046511104, 1024
local n, elapsed, group_max = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local ids = {}
for i = 1, n do ids[i] = ARGV[(i - 1) * 4 + 4] end
-- One read for the whole batch (not an HSETNX per job): which ids exist. A completed job's record
-- is still there (a completed record), so the same read tells a resent add.
local existing = redis.call('HMGET', K.j, unpack(ids))
local head = redis.call('ZRANGE', K.s, 0, 0, 'WITHSCORES')
local old_head = head[2] and tonumber(head[2]) or nil

local out, hset, zs, zp, zr, zg, written, touched = {}, {}, {}, {}, {}, {}, {}, {}
local created, earliest = 0, nil
for i = 1, n do
  local base = (i - 1) * 4 + 4
  local id, kind, value = ids[i], ARGV[base + 1], tonumber(ARGV[base + 2])
  local first = string.sub(kind, 1, 1)
  local run_at = value
  if first == 'd' or first == 'D' or first == 'G' then run_at = now - elapsed + value end
  local record = existing[i]
  local flags = record and string.byte(record, 2) or 0
  if record and flags >= 128 and bit.band(string.byte(record, 3), 0x08) ~= 0 then
    out[#out + 1] = 2
    out[#out + 1] = tonumber(redis.call('ZSCORE', K.c, id)) or -1
  elseif record or written[id] then
    out[#out + 1] = 0
    out[#out + 1] = -1
  else
    written[id] = true
    hset[#hset + 1] = id
    hset[#hset + 1] = ARGV[base + 3]
    if first == 'G' then
      -- The G block's due time is the script's to write: the client cannot know it for a delay.
      local g = string.sub(kind, 2)
      local record = ARGV[base + 3]
      local due = struct.pack('>I6', run_at)
      hset[#hset] = string.sub(record, 1, 3 + #g) .. due .. string.sub(record, 10 + #g)
      zg[#zg + 1] = 0
      zg[#zg + 1] = g .. '\0' .. due .. id
      touched[g] = true
    elseif first == 'd' or first == 'a' then
      zs[#zs + 1] = run_at
      zs[#zs + 1] = id
      if earliest == nil or run_at < earliest then earliest = run_at end
    elseif run_at <= now then
      -- Already due: straight to r, so a backlog of due prioritized jobs is ordered exactly.
      local prio = tonumber(string.sub(kind, 2))
      zr[#zr + 1] = (prio + PRIO_BASE) * TWO42 + run_at
      zr[#zr + 1] = string.sub(kind, 2) .. ':' .. id
    else
      zp[#zp + 1] = run_at
      zp[#zp + 1] = string.sub(kind, 2) .. ':' .. id
    end
    created = created + 1
    out[#out + 1] = 1
    out[#out + 1] = run_at
  end
end
if #hset > 0 then redis.call('HSET', K.j, unpack(hset)) end
if #zs > 0 then redis.call('ZADD', K.s, unpack(zs)) end
if #zp > 0 then redis.call('ZADD', K.p, unpack(zp)) end
if #zr > 0 then redis.call('ZADD', K.r, unpack(zr)) end
if #zg > 0 then
  redis.call('ZADD', K.gq, unpack(zg))
  -- A group not in turn yet, with a free slot, goes where its head says: gr if due, else gw at
  -- the head's due time (an earlier new head moves it earlier).
  local last_turn = nil
  for g in pairs(touched) do
    if not redis.call('ZSCORE', K.gr, g) and (tonumber(redis.call('HGET', K.gc, g)) or 0) < group_max then
      local head = redis.call('ZRANGEBYLEX', K.gq, '[' .. g .. '\0', '(' .. g .. '\1', 'LIMIT', 0, 1)[1]
      local due = struct.unpack('>I6', head, #g + 2)
      if due <= now then
        if last_turn == nil then
          local tail = redis.call('ZRANGE', K.gr, -1, -1, 'WITHSCORES')
          last_turn = tail[2] and tonumber(tail[2]) or 0
        end
        last_turn = last_turn + 1
        redis.call('ZREM', K.gw, g)
        redis.call('ZADD', K.gr, last_turn, g)
      else
        redis.call('ZADD', K.gw, due, g)
      end
    end
  end
end
if created > 0 then redis.call('HINCRBY', K.n, 'added', created) end
-- Sleeping workers need a word only when the head moved earlier (prioritized jobs: same rule on
-- p's head; left out of the prototype).
if earliest ~= nil and (old_head == nil or earliest < old_head) then
  redis.call('PUBLISH', K.w, string.format('%.0f', earliest))
end
return out
