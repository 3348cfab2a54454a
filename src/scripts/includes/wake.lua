-- announce_placed(K, placed, due): tell sleeping workers on K.w about a job just put back in
-- waiting (docs/ARCHITECTURE.md §4.10), given what place_waiting (place.lua) returned. In the
-- zset strategies that is true when the job became the earliest of its set, and the message is
-- its due time. In the wheel strategy (K.wi set) it is the end of a bucket that did not exist
-- before (or nil), and wheel_announce (wheel.lua) says it when no bucket ends earlier; a job put
-- straight into the ready list wakes workers blocked on that list by itself.

local function announce_placed(K, placed, due)
  if K.wi then return wheel_announce(K, K.w, placed) end
  if placed then redis.call('PUBLISH', K.w, string.format('%.0f', due)) end
end
