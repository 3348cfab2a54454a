-- add_job(K, id, run_at, envelope, meta): write one job exactly as add.lua does: the envelope
-- into K.jobs (only when the id is new), its bookkeeping into K.meta with r = run_at, and the
-- id into K.schedule at run_at. Returns true when written, false when the id existed (then
-- nothing is written). The caller publishes the wake-up (wake_if_head) once for its batch.
-- Needs prelude.lua (write_meta). `meta` is a fresh table per call: a = 0, m, optional b.

local function add_job(K, id, run_at, envelope, meta)
  if redis.call('HSETNX', K.jobs, id, envelope) == 0 then return false end
  meta.r = run_at
  write_meta(K.meta, id, meta)
  redis.call('ZADD', K.schedule, run_at, id)
  return true
end
