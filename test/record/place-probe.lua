-- Test probe for src/scripts/includes/place.lua (appended to record.lua and place.lua by
-- test/record/place-lua.test.ts). KEYS: s p r. ARGV[1] 'place' or 'unplace', ARGV[2] id,
-- ARGV[3] record, ARGV[4] due (place), ARGV[5] now (place).
-- Returns: place -> 1 when the job became the earliest where it went, else 0; unplace -> due or -1.
local K = { s = KEYS[1], p = KEYS[2], r = KEYS[3] }
local h = assert(rec_parse(ARGV[3]))
if ARGV[1] == 'place' then
  return place_waiting(K, ARGV[2], h, tonumber(ARGV[4]), tonumber(ARGV[5])) and 1 or 0
end
local due = unplace_waiting(K, ARGV[2], h)
return due and string.format('%.0f', due) or -1
