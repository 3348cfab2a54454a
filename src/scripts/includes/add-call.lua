-- add.lua, step 1: the call. Reads and checks what the whole call passes (N, elapsed and its
-- bound, events cap, group concurrency, the KEYS count, the wheel's granularity and buckets),
-- names the keys, reads the clock and places the add() call on it.
--
-- Inputs:  KEYS, ARGV[1..4] and, for the wheel, the values after the jobs (add.lua's header).
-- Outputs: call = { K, n, packed, first (ARGV index of the first job value), job_args (ARGV
--          values the jobs take), now (ms), now_us, called (the add() call, ms, server clock) },
--          or nil and an error reply (DELAYQ_BAD_ARG). Read only: nothing written.
-- Cost:    one TIME; no per-job work.
-- Needs:   prelude.lua, args.lua, wheel.lua.

-- The KEYS order, the one list add.lua's header documents: KEYS[i] is K[ADD_KEYS[i]], each key's
-- name in src/redis/keys.ts ending in ':<the same letters>'. test/hotpath/add-keys.test.ts holds
-- the header, this list and addKeys() in src/operations/add.ts to one order.
local ADD_KEYS = { 's', 'p', 'r', 'gq', 'gw', 'gr', 'gc', 'j', 'c', 'x', 'd', 'w', 'n', 'ev', 'a', 'gn', 'lg' }

local function add_call()
  local packed_text, n_text = string.match(ARGV[1] or '', '^(P?)([1-9]%d?%d?%d?%d?%d?)$')
  if not n_text then
    return nil, bad_arg('N ' .. tostring(ARGV[1]) .. ' is not a whole number of jobs from 1 to 999999, optionally after P (packed)')
  end
  local n = tonumber(n_text)
  local packed = packed_text == 'P'
  local first = 5
  -- ARGV values the jobs take: 5 each, or the one packed value.
  local job_args = packed and 1 or n * 5
  if #ARGV < first - 1 + job_args then
    return nil, bad_arg('ARGV has ' .. #ARGV .. ' values; N = ' .. ARGV[1] .. ' jobs need ' .. (first - 1 + job_args))
  end
  local elapsed_text, bound_text = string.match(ARGV[2] or '', '^(%d+):(%d+)$')
  if not elapsed_text then elapsed_text = ARGV[2] end
  if not whole_ms(elapsed_text) then
    return nil, bad_arg('elapsed ' .. tostring(ARGV[2]) .. ' is not whole ms >= 0, optionally followed by :epoch ms')
  end
  if bound_text and (#bound_text > 15 or tonumber(bound_text) < MIN_DUE_MS) then
    return nil, bad_arg('elapsed ' .. ARGV[2] .. ': the call time after the colon is not an epoch ms in 2000..9999')
  end
  local problem = check_events_cap(ARGV[3])
    or check_group_concurrency(ARGV[4], 'group concurrency')
    or check_key_count(#ADD_KEYS, true)
  if problem then return nil, bad_arg(problem) end

  local K = { events = KEYS[14], events_cap = tonumber(ARGV[3]), gmax = tonumber(ARGV[4]) }
  for i = 1, #ADD_KEYS do K[ADD_KEYS[i]] = KEYS[i] end
  problem = wheel_keys(K, #ADD_KEYS + 1, first + job_args)
  if problem then return nil, bad_arg(problem) end

  local now, now_us = now_ms_us()
  -- The add() call, by the server's clock: TIME less the time from the call to the send, or the
  -- client's bound when that is earlier (it also leaves out the time from the send to this script:
  -- queued behind other calls). Either is no earlier than the call. A bound more than 10 s before
  -- the script's own figure means the client's clock reading is off: it is not used.
  local called = now - tonumber(elapsed_text)
  if bound_text then
    local bound = tonumber(bound_text)
    if bound < called and bound >= called - 10000 then called = bound end
  end
  return { K = K, n = n, packed = packed, first = first, job_args = job_args, now = now, now_us = now_us, called = called }
end
