-- The claim's fixed bounds (claim.lua). Here rather than in the script's body: in the function
-- library an include's locals are defined once, where the body's are made at every call, and each
-- closure of the body that uses one searched the call's open upvalues for it (luaF_findupval).
-- Prioritized jobs promoted from p to r per call at most; the rest on the next call.
local PROMOTE = 1000
-- Expired leases one claim returns at most (reap-on-claim); the Reaper duty takes the rest.
local REAP_ON_CLAIM = 100
-- Claims are a uint16 in the record; past it they wrap (the claim time still tells tokens apart).
local MAX_CLAIMS = 65535
-- A claim that leases this many jobs makes sure `a` is a skiplist (skiplist.lua): with that many
-- leases a listpack's searches cost more than the check.
local LEASES_SKIPLIST_AT = 16
-- The same for gr when this many groups go back in turn in one call.
local GROUPS_SKIPLIST_AT = 16
