-- emit(K, kind, id, field, value, ...): append one event to the queue's stream (K.events),
-- capped near |K.events_cap| entries (MAXLEN ~, so trimming stays cheap). A cap of 0 turns
-- events off, for servers without streams (before Redis 5). A negative cap (events option
-- only: 'failures', the default of layout 2) leaves out the routine events, those of jobs going
-- as planned (added, claimed, completed, released, rescheduled, retried): each XADD costs Redis
-- about 3 µs, the largest single cost of a job. Failure events (failed, dead, lease-lost,
-- cancelled) and snoozed (a handler deferred its job: not routine either) are always written
-- (docs/ARCHITECTURE.md §7).

local ROUTINE_EVENTS = {
  added = true, claimed = true, completed = true, released = true, rescheduled = true, retried = true,
}

-- Whether emit writes events of `kind` under K's cap: a script that would emit one per job asks
-- once per call instead. emit's first lines are the same rule, written out so that a claim's
-- emit per job costs no second function call.
local function emits(K, kind)
  return K.events_cap > 0 or (K.events_cap < 0 and not ROUTINE_EVENTS[kind])
end

local function emit(K, kind, id, ...)
  if K.events_cap == 0 then return end
  local cap = K.events_cap
  if cap < 0 then
    if ROUTINE_EVENTS[kind] then return end
    cap = -cap
  end
  redis.call('XADD', K.events, 'MAXLEN', '~', cap, '*', 'type', kind, 'id', id, ...)
end
