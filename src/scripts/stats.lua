-- stats: add one worker's counts of the last second to the queue's totals, then write the
-- current second's snapshot of every total into the ring (docs/ARCHITECTURE.md §7).
--
-- KEYS[1] n  HASH: counter name -> total (monotonic); `s:<second mod 600>` -> snapshot
-- ARGV: pairs of counter name, delta (a whole number >= 0); names are those of COUNTERS and
--       TOTALS_ONLY below
-- Returns: the second (epoch s, server clock) whose snapshot was written. Error 'DELAYQ_BAD_ARG
--          <reason>' (nothing written) for KEYS other than one HASH, an odd ARGV count, a counter
--          name not below, a delta that is not a whole number (digits only, below 2^53).
-- Guarantee: the snapshot of second t holds the totals after the last flush of second t, from
--            whichever worker flushed last; readers take differences of consecutive snapshots, so
--            counts bumped by other scripts (add, fail, reap, cancel) show in the next snapshot.
--            A flush whose previous second has no snapshot first writes one there holding the
--            totals before its deltas, so its own counts show as a difference too.
-- Why the server's second and not the caller's: one clock (docs/DESIGN.md invariant 7), so snapshots of
-- workers with skewed clocks never land in each other's slots.
-- Snapshot layout: uint48 second, then uint32 per counter in COUNTERS order (each total mod 2^32;
-- a reader's difference mod 2^32 is right across the wrap). The order is repeated in
-- src/operations/stats.ts (COUNTER_NAMES); test/metrics/counters.test.ts checks they agree.

--!include prelude.lua
--!include args.lua

local COUNTERS = {
  'added', 'claimed', 'completed', 'failed', 'retried', 'dead', 'cancelled', 'reaped',
  'lat:1', 'lat:2', 'lat:5', 'lat:10', 'lat:20', 'lat:50', 'lat:100', 'lat:250', 'lat:500',
  'lat:1000', 'lat:5000', 'lat:+Inf', 'lat:sum', 'snoozed',
}
-- The run-time histogram (RUN_TIME_NAMES in src/operations/stats.ts): totals only, never in a
-- snapshot, so the ring's slots keep their size and format.
local TOTALS_ONLY = {
  'run:1', 'run:5', 'run:10', 'run:50', 'run:100', 'run:250', 'run:500', 'run:1000', 'run:2500',
  'run:5000', 'run:10000', 'run:30000', 'run:60000', 'run:300000', 'run:+Inf', 'run:sum',
}
local RING = 600

local known = {}
for _, name in ipairs(COUNTERS) do known[name] = true end
for _, name in ipairs(TOTALS_ONLY) do known[name] = true end
local problem = check_key_count(1, false) or check_key_types('h', false)
if problem then return bad_arg(problem) end
if #ARGV % 2 ~= 0 then
  return bad_arg('ARGV[' .. #ARGV .. '] counter ' .. ARGV[#ARGV] .. ' has no delta: stats takes pairs of counter name and delta')
end
for i = 1, #ARGV, 2 do
  if not known[ARGV[i]] then
    return bad_arg('ARGV[' .. i .. '] counter: unknown counter ' .. ARGV[i] .. ' (see COUNTERS and TOTALS_ONLY in stats.lua)')
  end
  if check_whole(ARGV[i + 1], 'delta', 0, 2 ^ 53 - 1) then
    return bad_arg('ARGV[' .. (i + 1) .. '] delta of ' .. ARGV[i] .. ' must be a whole number >= 0 below 2^53 (digits only), got ' .. ARGV[i + 1])
  end
end

-- Writes the totals as they are now into the ring slot of `sec`.
local function snapshot(sec)
  local totals = redis.call('HMGET', KEYS[1], unpack(COUNTERS))
  local fields = { sec }
  local format = '>I6'
  for i = 1, #COUNTERS do
    fields[#fields + 1] = (tonumber(totals[i]) or 0) % 4294967296
    format = format .. 'I4'
  end
  redis.call('HSET', KEYS[1], 's:' .. (sec % RING), struct.pack(format, unpack(fields)))
end

-- Whether a ring slot's bytes are the snapshot of second `sec` (not empty, not an older lap).
local function holds(slot, sec)
  return slot ~= false and #slot >= 6 and struct.unpack('>I6', slot) == sec
end

local second = math.floor(now_ms() / 1000)
-- The first flush after an idle spell has no snapshot in the second before it, and readers count
-- a second's work as the difference from the snapshot before it within their window: without a
-- baseline, this flush's counts would be lost to the charts and `delayq stats`' lateness. So the
-- totals as they were before this flush go into the previous second's slot first.
local slots = redis.call('HMGET', KEYS[1], 's:' .. (second % RING), 's:' .. ((second - 1) % RING))
if not holds(slots[1], second) and not holds(slots[2], second - 1) then snapshot(second - 1) end

for i = 1, #ARGV, 2 do
  if tonumber(ARGV[i + 1]) > 0 then redis.call('HINCRBY', KEYS[1], ARGV[i], ARGV[i + 1]) end
end
snapshot(second)
return second
