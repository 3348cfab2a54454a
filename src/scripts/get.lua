-- get: everything known about one job, read in one atomic step.
--
-- KEYS[1] schedule, KEYS[2] jobs, KEYS[3] meta, KEYS[4] active, KEYS[5] leases,
-- KEYS[6] dead, KEYS[7] errors, KEYS[8] completed, KEYS[9] progress
-- KEYS[10] cancelled (ZSET id -> cancelled at ms)
-- KEYS[11] wheel layout only: ready (present: a job in none of the sets is waiting in the wheel)
-- ARGV[1] id
-- Returns: false when the job is unknown; { 'cancelled', '', blank meta, cancelled at } for a job
--          cancelled recently (its record is gone; only the id and time are kept); else
--          { state, envelope, meta (JSON), score, lease or false, last error (JSON) or false,
--            progress (JSON) or false }
--          state is 'scheduled' (score = due), 'active' (score = lease deadline),
--          'dead' (score = died at) or 'completed' (score = finished at). In the wheel layout the
--          score of a scheduled job is its meta `r`.

local K = {
  schedule = KEYS[1], jobs = KEYS[2], meta = KEYS[3], active = KEYS[4], leases = KEYS[5],
  dead = KEYS[6], errors = KEYS[7], completed = KEYS[8], progress = KEYS[9], cancelled = KEYS[10], ready = KEYS[11],
}
local id = ARGV[1]
local envelope = redis.call('HGET', K.jobs, id)
if not envelope then
  -- A live job of the id (re-added since) answers above; only a gone one can be 'cancelled'.
  local at = redis.call('ZSCORE', K.cancelled, id)
  if at then return { 'cancelled', '', '{"a":0,"m":0}', at, false, false, false } end
  return false
end

local meta = redis.call('HGET', K.meta, id) or '{}'
local state, score = nil, nil
for _, candidate in ipairs({ { 'scheduled', K.schedule }, { 'active', K.active }, { 'dead', K.dead },
  { 'completed', K.completed } }) do
  score = redis.call('ZSCORE', candidate[2], id)
  if score then
    state = candidate[1]
    break
  end
end
if not state and K.ready then
  -- Placed, and in none of the sets: it waits in a bucket or in ready (wheel.lua is_waiting).
  state = 'scheduled'
  score = cjson.decode(meta).r or 0
end
if not state then return false end
return {
  state, envelope, meta, score,
  redis.call('HGET', K.leases, id), redis.call('HGET', K.errors, id), redis.call('HGET', K.progress, id),
}
