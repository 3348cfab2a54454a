-- pause: stop every worker of the queue (or of one partition) from claiming (layout 2,
-- docs/ARCHITECTURE.md §4.8).
--
-- KEYS[1] z   STRING present while paused; value: paused-at ms
-- KEYS[2] w   channel of wake messages
-- Returns: { now, 1 when this call paused the queue or 0 when it was paused already }; error
--          'DELAYQ_BAD_ARG <reason>' (nothing written) for KEYS other than 2.
-- Guarantee: once this returns, no claim of this queue (partition) takes a job until resume: the
--          gate is in the claim script itself (`EXISTS z`), so no message is needed for that.
--          The `P` message only turns off claim-ahead and local timers at once. Adds, acks,
--          fails, extends and reaps go on as before. The first pause's time is kept: a second
--          pause does not move it.

--!include prelude.lua
--!include args.lua

if #KEYS ~= 2 then return bad_arg('KEYS has ' .. #KEYS .. ' keys; pause takes 2 (z, w)') end
local now = now_ms()
local set = redis.call('SET', KEYS[1], now, 'NX')
redis.call('PUBLISH', KEYS[2], 'P')
return { now, set and 1 or 0 }
