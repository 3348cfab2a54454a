-- Keep a busy ZSET out of the listpack encoding. Redis stores a ZSET of up to 128 members of up to
-- 64 bytes (zset-max-listpack-entries / -value) as one listpack, which every ZSCORE, ZMSCORE, ZREM
-- and ZADD of a member searches from its start. The leases ZSET `a` of a busy queue holds dozens of
-- leases, each acked (ZMSCORE, ZREM) and made (ZADD) one member at a time: measured with
-- bench/redis-instructions.ts at 50 jobs per claim, those searches were ~15 % of all the
-- instructions Redis ran per job. As a skiplist (with its dict) each of them is a hash lookup.
-- Redis converts a ZSET to a skiplist when a member too long for a listpack is added, and keeps it
-- one until the key is emptied; so one long member added and removed again converts it.

-- Longer than zset-max-listpack-value (64 by default): 128 bytes. A literal, not string.rep: that
-- call alone cost Redis 7.0 ~650k instructions per script call (bench/redis-instructions.ts).
local SKIPLIST_MEMBER = '~delayq:skiplist~--------------------------------------------------------'
  .. '--------------------------------------------------------'

-- Before a batch of writes that add members to ZSET `key`: make it a skiplist first when it is a
-- listpack (or a ziplist, before Redis 7) or does not exist yet. Returns whether the placeholder
-- member went in; skiplist_end takes it out again after the writes. A server whose OBJECT command
-- is renamed away keeps the listpack: the same results, at the old cost.
local function skiplist_begin(key)
  local encoding = redis.pcall('OBJECT', 'ENCODING', key)
  if encoding == 'skiplist' or type(encoding) == 'table' then return false end
  redis.call('ZADD', key, '0', SKIPLIST_MEMBER)
  return true
end

local function skiplist_end(key, added)
  if added then redis.call('ZREM', key, SKIPLIST_MEMBER) end
end
