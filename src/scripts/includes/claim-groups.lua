-- Claim step 4, the groups (claim.lua): take grouped jobs fairly. Groups whose head is due move
-- from gw to gr (by rank: the first not due is when to look again); then rounds over gr in turn
-- order, one job per group per round, up to half of the take when other due jobs wait (all of it
-- when none do), so neither side holds the other back; the odd slot of an odd take goes to the
-- side this call's acks were not from, so a worker of concurrency 1 alternates. A taken group
-- goes to the back of gr (its next job is due and it has a slot), to gw at its next job's due, or
-- out of both (full, waiting for its rate limit's next token, or empty). A paused group is in
-- neither gw nor gr (groups.lua), so it is never looked at here.
-- Inputs: the context; `want`, the jobs the call may take; `others`, how many due jobs of the
--   default class it read (every job in r is due, so r's count is added here); the acks' grouped
--   and other counts (claim-acks.lua).
-- Outputs: the taken ids, their dues and their groups, in the order taken (their slots already
--   counted in gc and their members gone from gq), and when to look again (-1: nothing known).
-- Cost: ZRANGE gw 0 0, and when due ZRANGEBYSCORE gw + ZREM gw + ZADD gr; EXISTS gr, ZCARD r;
--   per round ZRANGE gr, then per group ZRANGEBYLEX gq and HINCRBY gc (and HGET/HSET gc of its
--   token bucket with a group rate limit), one ZREM gr and one ZADD per round; one ZREM gq and a
--   ZINCRBY gn per group taken from, per call.

-- A group whose slot was counted and then not used gives it back.
local function claim_group_unclaim(K, g)
  if redis.call('HINCRBY', K.gc, g, '-1') <= 0 then redis.call('HDEL', K.gc, g) end
end

local function claim_take_groups(c, want, others, acked_grouped, acked_other)
  local K, now, cutoff = c.K, c.now, c.cutoff
  local group_max, rate_max, rate_per = c.s.group_max, c.s.group_rate_max, c.s.group_rate_per
  local g_ids, g_due, g_groups = {}, {}, {}
  local next_at = -1
  -- Groups whose head's time has come go from gw to gr. The head of gw first (one score): when it
  -- is not due, neither is any other, and no score of a group not due is formatted as a double.
  local gw_head = redis.call('ZRANGE', K.gw, '0', '0', 'WITHSCORES')
  local gw_at = gw_head[2] and tonumber(gw_head[2])
  if gw_at and gw_at > cutoff then
    next_at = gw_at
  elseif gw_at then
    local gw_heads = redis.call('ZRANGEBYSCORE', K.gw, '-inf', c.cutoff_text, 'WITHSCORES', 'LIMIT', '0', int_text(want + 1))
    local promoted, turns = {}, {}
    for i = 1, #gw_heads, 2 do
      promoted[#promoted + 1] = gw_heads[i]
      turns[#turns + 1] = int_text(group_next_turn(K))
      turns[#turns + 1] = gw_heads[i]
    end
    redis.call('ZREM', K.gw, unpack(promoted))
    redis.call('ZADD', K.gr, unpack(turns))
    if #promoted == want + 1 then
      -- Every group read was due: more may be.
      next_at = now
    else
      local following = redis.call('ZRANGE', K.gw, '0', '0', 'WITHSCORES')
      if following[2] then next_at = tonumber(following[2]) end
    end
  end
  if redis.call('EXISTS', K.gr) == 0 then return g_ids, g_due, g_groups, next_at end
  -- Other due jobs: the default class's read (up to want) and all of r (every job there is due).
  others = others + redis.call('ZCARD', K.r)
  local budget = want
  if others > 0 then
    -- Half each; the odd slot alternates; the groups also take what the others cannot fill.
    local half = math.floor(want / 2)
    if want % 2 == 1 and acked_other >= acked_grouped then half = half + 1 end
    budget = math.max(half, want - others)
  end
  if budget <= 0 then return g_ids, g_due, g_groups, claim_earliest(next_at, now) end
  -- taken_order: the groups taken from, in order (their counts in gn change once each).
  local taken_members, taken_from, taken_order = {}, {}, {}
  local ready = redis.call('ZRANGE', K.gr, '0', int_text(budget - 1))
  while #ready > 0 do
    local leaving, requeue, to_gw = {}, {}, {}
    for _, g in ipairs(ready) do
      if #g_ids >= budget then break end
      -- Jobs taken from g by earlier rounds are still in gq until the end: skip past them.
      local offset = taken_from[g] or 0
      local heads = group_heads(K, g, offset, 2)
      local head = heads[1]
      local due = head and group_member_due(g, head)
      if not head or due > cutoff then
        -- Not possible while every path keeps the group states; repaired rather than trusted.
        leaving[#leaving + 1] = g
        if head then
          to_gw[#to_gw + 1] = ms_text(due)
          to_gw[#to_gw + 1] = g
        end
      else
        local running = redis.call('HINCRBY', K.gc, g, '1')
        local token_at = 0
        if running > group_max then
          -- Full (a caller that did not know the concurrency put it in turn): out of turn until
          -- one of its leases ends.
          claim_group_unclaim(K, g)
          leaving[#leaving + 1] = g
        elseif rate_max > 0 then
          token_at = group_take_token(K, g, now, rate_max, rate_per)
        end
        if token_at > 0 then
          -- Its rate limit: the group waits in gw for its next token.
          claim_group_unclaim(K, g)
          leaving[#leaving + 1] = g
          to_gw[#to_gw + 1] = ms_text(token_at)
          to_gw[#to_gw + 1] = g
          next_at = claim_earliest(next_at, token_at)
        elseif running <= group_max then
          taken_members[#taken_members + 1] = head
          if offset == 0 then taken_order[#taken_order + 1] = g end
          taken_from[g] = offset + 1
          g_ids[#g_ids + 1] = group_member_id(g, head)
          g_due[#g_due + 1] = due
          g_groups[#g_groups + 1] = g
          local following = heads[2]
          local following_due = following and group_member_due(g, following)
          if running < group_max and following and following_due <= cutoff then
            requeue[#requeue + 1] = int_text(group_next_turn(K))
            requeue[#requeue + 1] = g
          else
            leaving[#leaving + 1] = g
            if running < group_max and following then
              to_gw[#to_gw + 1] = ms_text(following_due)
              to_gw[#to_gw + 1] = g
            end
          end
        end
      end
    end
    if #leaving > 0 then redis.call('ZREM', K.gr, unpack(leaving)) end
    if #to_gw > 0 then redis.call('ZADD', K.gw, unpack(to_gw)) end
    -- Back of the turns: ZADD with a new turn moves it.
    if #requeue > 0 then redis.call('ZADD', K.gr, unpack(requeue)) end
    if #g_ids >= budget or (#requeue == 0 and #leaving == 0) then break end
    ready = redis.call('ZRANGE', K.gr, '0', int_text(budget - #g_ids - 1))
  end
  if #taken_members > 0 then
    call_chunked('ZREM', K.gq, taken_members, 1)
    for _, g in ipairs(taken_order) do group_count(K, g, -taken_from[g]) end
  end
  -- Groups still in turn mean due grouped jobs left: look again at once.
  if redis.call('EXISTS', K.gr) == 1 then next_at = claim_earliest(next_at, now) end
  return g_ids, g_due, g_groups, next_at
end
