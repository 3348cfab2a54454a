-- reschedule: move a waiting job to a new due time.
--
-- KEYS[1] schedule  ZSET id -> due ms
-- KEYS[2] meta      HASH id -> bookkeeping
-- KEYS[3] wake      channel
-- KEYS[4] events    STREAM of job events
-- KEYS[5] jobs, KEYS[6] active, KEYS[7] dead, KEYS[8] completed
-- KEYS[9...] wheel layout only: ready, wheel, wheel count, then bucket lists (wheel.lua)
-- ARGV[1] id, ARGV[2] when-kind ('d' = delay ms from now, 'a' = absolute epoch ms), ARGV[3] when-value,
-- ARGV[4] events cap
-- ARGV[5...] wheel layout only: granularity ms, then the start of each bucket list passed in KEYS
-- Returns: the new due time, or -1 when the job is not waiting (unknown, running, dead); wheel
--          layout: error 'DELAYQ_WRONG_BUCKET <start>,...' (nothing written) when the old or the
--          new bucket was not passed. Error 'DELAYQ_BAD_ARG <reason>' (nothing written) when the
--          when-value is not plain digits or the due time is outside [2000-01-01, 9999-12-31].
-- Cost: zset layout O(log n); wheel layout O(length of the old bucket, or of ready) (LREM).

--!include prelude.lua
--!include events.lua
--!include wheel.lua
--!include args.lua

local K = {
  schedule = KEYS[1], meta = KEYS[2], wake = KEYS[3], events = KEYS[4], jobs = KEYS[5],
  active = KEYS[6], dead = KEYS[7], completed = KEYS[8], events_cap = tonumber(ARGV[4]),
}
wheel_keys(K, 9, 5)
local id = ARGV[1]
local now = now_ms()
local run_at, problem = check_when(ARGV[2], ARGV[3], now)
if problem then return bad_arg(problem) end
if not is_waiting(K, id) then return -1 end
local meta = read_meta(K.meta, id)
local missing = missing_buckets(K, { run_at }, { meta and meta.r or 0 }, now)
if missing then return missing end
if not unplace(K, id, meta) then return -1 end
if meta then
  meta.r = run_at
  write_meta(K.meta, id, meta)
end
announce(K, place(K, id, run_at, now))
emit(K, 'rescheduled', id, 'runAt', run_at, 'at', now)
return run_at
