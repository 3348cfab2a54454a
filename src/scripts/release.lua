-- release: hand a held job back to the schedule without charging the attempt: due now for a
-- worker shutting down before its handler finished, or after a delay for a job this worker
-- cannot read yet (a payload version newer than it knows, during a rolling deploy).
--
-- KEYS[1] schedule  ZSET id -> due ms
-- KEYS[2] meta      HASH id -> bookkeeping
-- KEYS[3] active    ZSET id -> lease deadline ms
-- KEYS[4] leases    HASH id -> "token|startMs|workerId"
-- KEYS[5] wake      channel
-- KEYS[6] events    STREAM of job events
-- KEYS[7] progress  HASH id -> the running job's last progress value (deleted: the attempt ended)
-- KEYS[8...]        wheel layout only: ready, wheel, wheel count, then bucket lists (wheel.lua)
-- ARGV[1] id, ARGV[2] token, ARGV[3] delay ms before it is due again, ARGV[4] events cap
-- ARGV[5...] wheel layout only: granularity ms, then the start of each bucket list passed in KEYS
-- Returns: 1 when released, 0 when the lease was no longer held (then the reaper owns the job);
--          wheel layout: error 'DELAYQ_WRONG_BUCKET <start>' (nothing written) when the bucket
--          of the new due time was not passed. Error 'DELAYQ_BAD_ARG <reason>' (nothing written)
--          when the delay is not plain digits.
-- Guarantee (fencing): only the holder of a valid lease can release it.

--!include prelude.lua
--!include events.lua
--!include lease-check.lua
--!include wheel.lua
--!include args.lua

local K = {
  schedule = KEYS[1], meta = KEYS[2], active = KEYS[3], leases = KEYS[4], wake = KEYS[5],
  events = KEYS[6], events_cap = tonumber(ARGV[4]), progress = KEYS[7],
}
wheel_keys(K, 8, 5)
if not whole_ms(ARGV[3]) then
  return bad_arg('delay ' .. tostring(ARGV[3]) .. ' is not a whole number of ms >= 0 (digits only)')
end
local id, token, delay = ARGV[1], ARGV[2], tonumber(ARGV[3])
local now = now_ms()
if check_lease(K, id, token, now) then return 0 end
local missing = missing_buckets(K, { now + delay }, {}, now)
if missing then return missing end

redis.call('ZREM', K.active, id)
redis.call('HDEL', K.leases, id)
redis.call('HDEL', K.progress, id)
local meta = read_meta(K.meta, id)
if meta.a > 0 then meta.a = meta.a - 1 end
meta.r = now + delay
write_meta(K.meta, id, meta)
announce(K, place(K, id, now + delay, now))
emit(K, 'released', id, 'runAt', now + delay, 'at', now)
return 1
