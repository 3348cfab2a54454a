-- add_job(K, id, run_at, envelope, meta, now): write one job as add.lua does: the envelope into
-- K.jobs (only when the id is new), its bookkeeping into K.meta with r = run_at, and the id where
-- the layout keeps waiting jobs (place). Returns false when the id existed (nothing is written),
-- else true and what place() returned, for the caller to announce once for its batch.
-- Needs prelude.lua (write_meta) and wheel.lua (place). `meta` is a fresh table per call.

local function add_job(K, id, run_at, envelope, meta, now)
  if redis.call('HSETNX', K.jobs, id, envelope) == 0 then return false, nil end
  meta.r = run_at
  write_meta(K.meta, id, meta)
  return true, place(K, id, run_at, now)
end
