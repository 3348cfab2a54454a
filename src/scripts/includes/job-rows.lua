-- The rows of a page of jobs, as list.lua and group-jobs.lua reply them (operations/inspect.ts and
-- operations/groups.ts decode them): per job found, { id, record, score, last error or false,
-- holder "<worker id>|<started ms>" or false, progress or false (active only), lease member or
-- false }. A job whose record is gone between the range read and here is left out.
-- Needs record.lua (rec_parse).

-- HMGET in chunks: unpack() of more values than Lua's stack allows (8000) would fail a big page.
local function hmget(key, fields)
  local values = {}
  for first = 1, #fields, 1000 do
    local part = redis.call('HMGET', key, unpack(fields, first, math.min(#fields, first + 999)))
    for i = 1, #part do values[first + i - 1] = part[i] end
  end
  return values
end

-- keys: { j = records, e = errors, wk = holders, pg = progress }; with_progress: the page is of
-- running jobs (only they have progress). lead (optional): per id, a list of values put before its
-- row (search.lua: the key its caller merges partitions by).
local function job_rows(keys, ids, scores, members, with_progress, lead)
  if #ids == 0 then return {} end
  local records = hmget(keys.j, ids)
  local errors = hmget(keys.e, ids)
  local progress = with_progress and hmget(keys.pg, ids) or {}
  local out = {}
  for i, id in ipairs(ids) do
    local rec = records[i]
    if rec then
      local h = rec_parse(rec)
      local holder = (h and h.holder > 0) and redis.call('HGET', keys.wk, tostring(h.holder)) or false
      if lead then
        for _, value in ipairs(lead[i]) do out[#out + 1] = value end
      end
      out[#out + 1] = id
      out[#out + 1] = rec
      out[#out + 1] = scores[i]
      out[#out + 1] = errors[i] or false
      out[#out + 1] = holder or false
      out[#out + 1] = progress[i] or false
      out[#out + 1] = members[i]
    end
  end
  return out
end
