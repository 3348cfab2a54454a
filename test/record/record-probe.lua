-- Test probe for src/scripts/includes/record.lua (appended to it by test/record/record-lua.test.ts).
-- ARGV[1] operation, ARGV[2] a record, then the operation's arguments.
-- Returns: parse -> flat list of field name, value (text; 'nil' for absent) or {'error', reason};
-- claimed / error-on / error-off / uncharge / final-cancelled -> the new record; final-problem ->
-- rec_final_problem's reason or 'ok'; member -> the lease member and id.
local op, rec = ARGV[1], ARGV[2]
local h, reason = rec_parse(rec)
if not h then return { 'error', reason } end
local function text(v)
  if v == nil then return 'nil' end
  if type(v) == 'number' then return string.format('%.0f', v) end
  return tostring(v)
end
if op == 'parse' then
  local out = {}
  for _, name in ipairs({ 'attempts', 'claims', 'claimed_at', 'run_due', 'holder', 'max', 'prio',
    'group', 'group_due', 'timeout', 'has_error', 'completed', 'cancelled', 'has_result', 'body' }) do
    out[#out + 1] = name
    out[#out + 1] = text(h[name])
  end
  return out
elseif op == 'claimed' then
  return rec_claimed(rec, h, tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]))
elseif op == 'error-on' then
  return rec_with_error_flag(rec, h, true)
elseif op == 'error-off' then
  return rec_with_error_flag(rec, h, false)
elseif op == 'uncharge' then
  return rec_uncharge(rec, h)
elseif op == 'final-cancelled' then
  return rec_final(rec, h, REC_B_CANCELLED)
elseif op == 'final-problem' then
  return rec_final_problem(rec) or 'ok'
elseif op == 'member' then
  local member = rec_member(h, ARGV[3])
  return { member, member_id(member), member_token(member), member_group(member) or 'nil' }
end
return redis.error_reply('unknown probe operation ' .. op)
