-- migrate-seal: close one partition's conversion for `delayq migrate` (docs/ARCHITECTURE.md
-- §10) once migrate-write.lua has emptied its layout-1 job keys: the bookkeeping keys with no job
-- in them go (rate limit and wheel lists included), the events stream keeps its history under its layout-2 name, and sleeping workers
-- learn the head of the waiting set.
--
-- KEYS[1..9] layout 1: schedule, jobs, meta, active, leases, dead, errors, completed, done
-- KEYS[10] token   STRING layout-1 fencing counter
-- KEYS[11] layout  STRING layout-1 layout key of this partition's tag
-- KEYS[12] events  STREAM layout-1 events
-- KEYS[13] ev      STREAM layout-2 events
-- KEYS[14] waiting ZSET layout-2 `s`
-- KEYS[15] wake    channel `w`
-- KEYS[16] limiter ZSET layout-1 rate limit log (layout 2 starts its own, `lim`)
-- KEYS[17] ready, KEYS[18] wheel, KEYS[19] wheel-count   layout-1 wheel keys, then KEYS[20...]
--          the layout-1 wheel bucket lists the index named: they hold only ids of jobs converted
--          already (a wheel queue's waiting jobs go to `s`, which a layout-2 wheel claim sweeps)
-- Returns: { 'sealed' }, or { 'busy', key, entries } (nothing written) when a layout-1 job key
--          still holds entries: a layout-1 client wrote after the chunks were converted.
--          Error 'DELAYQ_BAD_ARG <reason>' (nothing written) for fewer than 19 KEYS, a key of
--          another type than the one above, or any ARGV.
-- Guarantee: nothing is deleted while a job of the partition is still in layout 1.

--!include args.lua

if #KEYS < 19 then return bad_arg('KEYS has ' .. #KEYS .. ' keys; migrate-seal takes 19, then the wheel bucket lists') end
-- The layout-1 job keys, token, layout, events, ev, s, w (channel), limiter, ready, wheel, wheel
-- count, then bucket lists: a key of another type would fail the PUBLISH's read of s after the
-- deletes, or be deleted as what it is not.
local problem = check_key_types('zhhzhzhzzssxxz-zlzs' .. string.rep('l', #KEYS - 19), false)
  or check_arg_count(0, 'migrate-seal')
if problem then return bad_arg(problem) end

for i = 1, 9 do
  local key = KEYS[i]
  local kind = redis.call('TYPE', key)['ok']
  local size = 0
  if kind == 'zset' then size = redis.call('ZCARD', key) elseif kind == 'hash' then size = redis.call('HLEN', key) end
  if size > 0 then return { 'busy', key, size } end
end
redis.call('DEL', KEYS[10], KEYS[11])
for i = 16, #KEYS do redis.call('DEL', KEYS[i]) end
if redis.call('EXISTS', KEYS[12]) == 1 then
  -- Layout-2 clients are refused until migrate-end, so `ev` is empty unless a previous run
  -- renamed already; history then stays where it is.
  if redis.call('EXISTS', KEYS[13]) == 0 then redis.call('RENAME', KEYS[12], KEYS[13]) else redis.call('DEL', KEYS[12]) end
end
local head = redis.call('ZRANGE', KEYS[14], 0, 0, 'WITHSCORES')
if head[2] then redis.call('PUBLISH', KEYS[15], head[2]) end
return { 'sealed' }
