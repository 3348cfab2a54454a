-- add.lua, step 4: place the new jobs by class. The default class and groups are written per
-- batch: the records in one HSET, the default class's entries in one ZADD s, the grouped jobs'
-- in one ZADD gq, then each group touched put in its state once (counted, refreshed). Prioritized
-- jobs and the wheel go one by one through place_waiting (place.lua).
--
-- Inputs:  call, jobs (steps 1 and 2), fresh and count (step 3: the new jobs' indexes), s_head
--          (the earliest due in s before the call, nil when empty or the wheel), done (add.lua).
-- Outputs: the jobs written and placed; done.created counts them, and done's wake (add-wake.lua)
--          holds what sleeping workers must hear. A grouped job's record gets its G block's due
--          time (jobs.recs[i] is the record written).
-- Cost:    default class: per job two table appends, no command; per batch one HSET j and one
--          ZADD s (call_chunked: per 1000 jobs). Grouped: the same HSET, one ZADD gq, and per
--          group one ZINCRBY gn and group_refresh (a ZRANGEBYLEX, an HGET, two ZREM or ZADD). Prioritized: per job HSET j, ZRANGE, ZADD.
--          The wheel: per job HSET j, RPUSH, HSET wc, ZADD wi.
-- Needs:   prelude.lua, record.lua, place.lua (groups.lua), wheel.lua, add-wake.lua.

local function add_place(call, jobs, fresh, count, s_head, done)
  local K, now, wheel = call.K, call.now, call.K.wi ~= nil
  local ids, dues, recs, heads, default_h = jobs.ids, jobs.dues, jobs.recs, jobs.heads, jobs.default_h
  local hset, zs, zg, hset_n, zs_n, zg_n = {}, {}, {}, 0, 0, 0
  -- The groups new jobs joined (in order) and how many joined each.
  local joined, groups = {}, {}
  -- s's scores as text (ms_text, prelude.lua: Redis 7.0 would format a Lua number with '%.17g'),
  -- and the jobs of one call often share a due time (one delay for all), so the text of the
  -- previous one is kept.
  local last_due, last_due_text = nil, nil
  for k = 1, count do
    local i = fresh[k]
    local id, due, rec, h = ids[i], dues[i], recs[i], heads[i]
    if not wheel and (h == default_h or h.prio == 0 and not h.group) then
      -- The lists' lengths are counted: `#` is a search in Lua 5.1.
      hset[hset_n + 1], hset[hset_n + 2], hset_n = id, rec, hset_n + 2
      if due ~= last_due then last_due, last_due_text = due, ms_text(due) end
      zs[zs_n + 1], zs[zs_n + 2], zs_n = last_due_text, id, zs_n + 2
      if (s_head == nil or due < s_head) and (done.wake_at == nil or due < done.wake_at) then
        done.wake_at = due
      end
    elseif h.group and not wheel then
      -- The G block holds the due time the job waits under in gq (its member there).
      rec = rec_with_group_due(rec, h, due)
      h.group_due = due
      recs[i] = rec
      hset[hset_n + 1], hset[hset_n + 2], hset_n = id, rec, hset_n + 2
      zg[zg_n + 1], zg[zg_n + 2], zg_n = 0, group_member(h.group, due, id), zg_n + 2
      local g = h.group
      if joined[g] then
        joined[g] = joined[g] + 1
      else
        joined[g] = 1
        groups[#groups + 1] = g
      end
    else
      redis.call('HSET', K.j, id, rec)
      add_placed(call, done, place_waiting(K, id, h, due, now), due)
    end
  end
  call_chunked('HSET', K.j, hset, 2)
  call_chunked('ZADD', K.s, zs, 2)
  call_chunked('ZADD', K.gq, zg, 2)
  -- Each group new jobs joined counts them and goes where its head says (once per group).
  for _, g in ipairs(groups) do
    group_count(K, g, joined[g])
    local due = group_refresh(K, g, now)
    if due then add_wake(done, math.max(due, now)) end
  end
  done.created = done.created + count
end
