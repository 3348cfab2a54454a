-- counts: how many jobs are in each state, by the server clock (docs/ARCHITECTURE.md §4.9).
--
-- KEYS[1] s  KEYS[2] p  KEYS[3] r  KEYS[4] gq  KEYS[5] gr  KEYS[6] a  KEYS[7] d  KEYS[8] c
-- KEYS[9] x  KEYS[10] z
-- KEYS[11..13] wheel strategy only: wr, wi, wc (wheel.lua); ARGV[1] then is the granularity ms
-- Returns: { scheduled, due, active, dead, completed, cancelled, paused (0/1), now,
--            next_due or -1 }
--          scheduled counts every waiting job (s, p, r, gq; the wheel's buckets and ready list);
--          due is the part of it whose time has come: s and p up to now, all of r, one per ready
--          group (counting every due job of every group would be O(groups)), and the wheel's
--          ready list (a bucket's jobs fall due together, when it is promoted). next_due is the
--          earliest due time among the heads of s, p and r (r's head is its first in claim order,
--          so with priorities this is close, not exact) and the wheel's next (wheel_counts).
-- Guarantee: read-only; O(log N) per set.

--!include prelude.lua
--!include wheel.lua

local TWO42 = 4398046511104
local s, p, r, gq, gr, a, d, c, x, z = unpack(KEYS, 1, 10)
local K = {}
local bad = wheel_keys(K, 11, 1)
if bad then return redis.error_reply('DELAYQ_BAD_ARG ' .. bad) end
local now = now_ms()

local next_due = -1
local function earlier(due)
  if due ~= nil and (next_due == -1 or due < next_due) then next_due = due end
end
local function head_due(key)
  local head = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  return head[2] and tonumber(head[2]) or nil
end

earlier(head_due(s))
earlier(head_due(p))
local r_head = head_due(r)
if r_head then earlier(r_head % TWO42) end

local ready = redis.call('ZCARD', r)
local scheduled = redis.call('ZCARD', s) + redis.call('ZCARD', p) + ready + redis.call('ZCARD', gq)
local due = redis.call('ZCOUNT', s, '-inf', now) + redis.call('ZCOUNT', p, '-inf', now) + ready
  + redis.call('ZCARD', gr)
if K.wi then
  local waiting, ready_ids, wheel_next_due = wheel_counts(K, now)
  scheduled = scheduled + waiting
  due = due + ready_ids
  if wheel_next_due >= 0 then earlier(wheel_next_due) end
end
return {
  scheduled,
  due,
  redis.call('ZCARD', a),
  redis.call('ZCARD', d),
  redis.call('ZCARD', c),
  redis.call('ZCARD', x),
  redis.call('EXISTS', z),
  now,
  next_due,
}
