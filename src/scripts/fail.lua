-- fail: an attempt failed; schedule a retry after the given delay, or bury the job.
--
-- KEYS[1] schedule  ZSET id -> due ms
-- KEYS[2] jobs      HASH id -> envelope
-- KEYS[3] meta      HASH id -> bookkeeping
-- KEYS[4] active    ZSET id -> lease deadline ms
-- KEYS[5] leases    HASH id -> "token|startMs|workerId"
-- KEYS[6] dead      ZSET id -> died at ms
-- KEYS[7] errors    HASH id -> last error
-- KEYS[8] wake      channel
-- KEYS[9] events    STREAM of job events
-- KEYS[10] progress HASH id -> the running job's last progress value (deleted: the attempt ended)
-- KEYS[11...]       wheel layout only: ready, wheel, wheel count, then bucket lists (wheel.lua)
-- ARGV[1] id, ARGV[2] token, ARGV[3] retry delay ms (-1: bury now, whatever attempts are left),
-- ARGV[4] error (JSON), ARGV[5] dead max count, ARGV[6] dead max age ms, ARGV[7] events cap,
-- ARGV[8] short reason for the event (the error's message, truncated)
-- ARGV[9...] wheel layout only: granularity ms, then the start of each bucket list passed in KEYS
-- Returns: { 'RETRY', run_at } or { 'DEAD', died_at }; or { 'ALREADY', -1 } when this fail was
--          already applied (a resent command); or error 'DELAYQ_LEASE_LOST <why>'; or, wheel
--          layout, error 'DELAYQ_WRONG_BUCKET <start>' when the retry's bucket was not passed.
--          Error 'DELAYQ_BAD_ARG <reason>' when the retry delay is not -1 or plain digits.
--          Any error means nothing was written.
-- Guarantee (fencing): only the holder of a valid lease can fail the job.

--!include prelude.lua
--!include events.lua
--!include wheel.lua
--!include bury.lua
--!include lease-check.lua
--!include args.lua

local K = {
  schedule = KEYS[1], jobs = KEYS[2], meta = KEYS[3], active = KEYS[4], leases = KEYS[5],
  dead = KEYS[6], errors = KEYS[7], wake = KEYS[8], events = KEYS[9], events_cap = tonumber(ARGV[7]),
  progress = KEYS[10],
}
wheel_keys(K, 11, 9)
if ARGV[3] ~= '-1' and not whole_ms(ARGV[3]) then
  return bad_arg('retry delay ' .. tostring(ARGV[3]) .. ' is not -1 or a whole number of ms >= 0')
end
local id, token, delay = ARGV[1], ARGV[2], tonumber(ARGV[3])
local dead_max_count, dead_max_age_ms = tonumber(ARGV[5]), tonumber(ARGV[6])
local now = now_ms()

local lost = check_lease(K, id, token, now)
if lost then
  local meta = read_meta(K.meta, id)
  if meta and meta.t == token then return { 'ALREADY', -1 } end
  return redis.error_reply('DELAYQ_LEASE_LOST ' .. lost)
end

local meta = read_meta(K.meta, id)
local retry = false
if delay >= 0 and meta.a < meta.m then
  retry = true
  local missing = missing_buckets(K, { now + delay }, {}, now)
  if missing then return missing end
end

redis.call('ZREM', K.active, id)
redis.call('HDEL', K.leases, id)
-- Progress is the attempt's: a retry starts from nothing, and a dead job shows its last error.
redis.call('HDEL', K.progress, id)
redis.call('HSET', K.errors, id, ARGV[4])
meta.t = token
if retry then
  local run_at = now + delay
  meta.r = run_at
  write_meta(K.meta, id, meta)
  announce(K, place(K, id, run_at, now))
  emit(K, 'failed', id, 'attempt', meta.a, 'retryAt', run_at, 'at', now, 'reason', ARGV[8])
  return { 'RETRY', run_at }
end
write_meta(K.meta, id, meta)
emit(K, 'failed', id, 'attempt', meta.a, 'retryAt', -1, 'at', now, 'reason', ARGV[8])
bury(K, id, now, dead_max_count, dead_max_age_ms)
return { 'DEAD', now }
