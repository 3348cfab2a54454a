-- Test probe for the member formats of src/scripts/includes/record.lua (lease), groups.lua (group)
-- and place.lua (priority); appended to them by test/members/members-lua.test.ts. No KEYS.
-- ARGV[1] 'lease': ARGV[2] claims, ARGV[3] claimed at, ARGV[4] id, ARGV[5] group ('-' none), and
--   ARGV[6] a member to parse -> { built member, then of ARGV[6]: member_id, member_token,
--   member_group or '-', and member_id_group's id and group or '-' }
-- ARGV[1] 'group': ARGV[2] group, ARGV[3] due, ARGV[4] id, ARGV[5] a member of that group to parse
--   -> { built member, then of ARGV[5]: its due as text, its id }
-- ARGV[1] 'priority': ARGV[2] priority, ARGV[3] id, ARGV[4] a member to parse
--   -> { built member, then the id of ARGV[4] }
local op = ARGV[1]
if op == 'lease' then
  local group = ARGV[5] ~= '-' and ARGV[5] or nil
  local h = { claims = tonumber(ARGV[2]), claimed_at = tonumber(ARGV[3]), group = group }
  local member = ARGV[6]
  local id, g = member_id_group(member)
  return { rec_member(h, ARGV[4]), member_id(member), member_token(member), member_group(member) or '-', id, g or '-' }
elseif op == 'group' then
  local g, member = ARGV[2], ARGV[5]
  return { group_member(g, tonumber(ARGV[3]), ARGV[4]), string.format('%.0f', group_member_due(g, member)), group_member_id(g, member) }
elseif op == 'priority' then
  return { prio_member(tonumber(ARGV[2]), ARGV[3]), prio_member_id(ARGV[4]) }
end
return redis.error_reply('unknown probe operation ' .. op)
