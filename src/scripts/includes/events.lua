-- emit(K, kind, id, field, value, ...): append one event to the queue's stream (K.events),
-- capped near K.events_cap entries (MAXLEN ~, so trimming stays cheap). A cap of 0 turns
-- events off, for servers without streams (before Redis 5).

local function emit(K, kind, id, ...)
  if K.events_cap <= 0 then return end
  redis.call('XADD', K.events, 'MAXLEN', '~', K.events_cap, '*', 'type', kind, 'id', id, ...)
end
