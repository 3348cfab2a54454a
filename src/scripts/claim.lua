-- claim: ack the jobs a worker finished, then lease it up to `limit` due jobs, in one call
-- (docs/ARCHITECTURE.md §4.2). Every strategy uses this script: zpopmin and range on the
-- waiting sets, the wheel through wheel_take (wheel.lua).
--
-- KEYS[1] s   ZSET id -> due ms: waiting jobs of the default class
-- KEYS[2] p   ZSET "<prio>:<id>" -> due ms: waiting prioritized jobs, not yet promoted
-- KEYS[3] r   ZSET "<prio>:<id>" -> (prio + 1024) * 2^42 + due: due prioritized jobs
-- KEYS[4] gq  ZSET, scores 0: "<group>\0<due: 6 bytes BE><id>" of waiting grouped jobs
-- KEYS[5] gw  ZSET group -> when to look at it again: groups with a free slot, head not due (or
--             waiting for their rate limit's next token)
-- KEYS[6] gr  ZSET group -> turn: groups with a free slot and a due head, lowest turn first
-- KEYS[7] gc  HASH group -> running count; "<group>\0l" -> the group's rate bucket
-- KEYS[8] j   HASH id -> record
-- KEYS[9] a   ZSET lease member "<claims>.<claimed at>|<id>[\0<group>]" -> deadline ms
-- KEYS[10] c  ZSET id -> completed at ms
-- KEYS[11] x  ZSET id -> cancelled at ms (the reason a cancelled job's late ack is refused)
-- KEYS[12] e  HASH id -> last error (deleted by the ack of a job that had one)
-- KEYS[13] d  ZSET id -> died at ms (a job whose record is missing or unreadable is buried)
-- KEYS[14] z  STRING present while the queue (partition) is paused
-- KEYS[15] lim ZSET lease member -> start ms of recent starts: the queue-wide rate limit
-- KEYS[16] ev STREAM of events
-- KEYS[17] w  channel: wake messages
-- KEYS[18] n  HASH of counters (reap-on-claim counts `reaped`; workers flush claimed/completed)
-- KEYS[19] pg HASH id -> progress of a running job (deleted when its attempt ends)
-- KEYS[20] gn  ZSET group -> its waiting jobs (taken jobs leave their group's count)
-- KEYS[21] f  HASH flow bookkeeping (flow.lua)
-- KEYS[22] fw ZSET parent -> its own due ms: flow parents waiting for their children;
--             read and written only for acks flagged 'w' and for burials of a flow's jobs
-- KEYS[23...] wheel strategy only: ready, wheel, wheel count, then bucket lists (wheel.lua)
-- ARGV[1] limit: jobs to claim, 0..1000000 (0: ack only), ARGV[2] lease ms (>= 1), ARGV[3] holder
-- number (wk, 0..4294967295), ARGV[4] group concurrency (the queue's recorded one, 0..1000000; 0
-- counts as 1), ARGV[5] group rate max, ARGV[6] group rate per ms (0, 0: none; a max > 0 needs a
-- per >= 1), ARGV[7] queue rate max, ARGV[8] queue rate per ms (the same rule), ARGV[9] dead max
-- count, ARGV[10] dead max age ms (whole numbers, 0: no bound), ARGV[11] flags, each at most
-- once: 'z' the strategy allows ZPOPMIN, 'm' the server has ZMSCORE (Redis >= 6.2), 'a<ms>' claim
-- ahead: also lease jobs of the default class and of groups due up to <ms> (0-1000) after now,
-- which the worker starts at their due time by its lower bound of the server clock, not before
-- (docs/ARCHITECTURE.md §5.3; prioritized jobs and the wheel, whose buckets go whole, only when
-- due),
-- ARGV[12] events cap (events.lua),
-- ARGV[13] M acks (0..1000000), then 4 per ack: lease member "<claims>.<claimed at>|<id>[\0<group>]";
-- the lease deadline the worker was last told, whole ms (a resent ack is recognised by it); flags,
-- each at most once: 'e' the job had a last error, 'p' it reported progress, 'w' the job belongs
-- to a flow (its record has the F flag: its parent counts its completion, flow.lua), 'f' the job's final
-- record follows (what to store: a completed record with the claim block and max attempts of the
-- claim, and the result with U; record.lua rec_final_problem says what is accepted), or, from
-- workers of delayq 0.2, 'u' a result follows; the final record ('f'), the result bytes (the
-- codec's, with 'u') or nothing (''). Without 'f' the script makes the completed record from the
-- stored one (claim block and max attempts kept, the result after them with 'u'): one HGET per
-- such ack. Wheel strategy only, after the acks: granularity ms and the start of each bucket list
-- in KEYS.
-- Returns: { now, next_at, paused (0/1), the M ack outcomes as one string of a letter each (O: OK,
--          A: already applied, C: lost, cancelled, E: lost, expired, N: lost, not held), n, then 3
--          per job: lease member, record (with its new claim block), due }, and with the wheel
--          strategy after them: jobs left in ready, 1 when due buckets were left for lack of their
--          keys (claim again at once), m, and the starts of the index's first m buckets (pass
--          those next time); last, the script's TIME in µs. next_at: when to claim again (-1:
--          nothing known; paused: wait for the resume message). Error 'DELAYQ_BAD_ARG <reason>'
--          for a KEYS count other than 22 (25 or more with the wheel), an ARGV count other than 13
--          + 4 per ack (+ the wheel's), or any argument out of its range, naming it (ARGV[2] lease
--          ms ..., ack 3 of 50: member ...); wheel: error 'DELAYQ_WRONG_BUCKET <start>'. Any error
--          means nothing was written.
-- Cost: see each step's include. At 50 jobs a call: a read of the acks' shared deadline (no
--          scores) and one ZREM a, ZADD c, EXISTS, ZRANGEBYSCORE s (ids, no scores) + ZSCORE s and
--          ZCOUNT s per run of heads of one due time + ZREM s, HMGET j, HSET j and ZADD a: no
--          command per job. At 1: TIME, the ack's own ZREM a, ZADD c, EXISTS, ZPOPMIN s,
--          HMGET j, HSET j, ZADD a.
-- Guarantee: an ack is applied only for a member whose lease is still valid (docs/DESIGN.md invariant 4);
--          a job is leased only when due by TIME (invariant 3) and the queue is not paused; among
--          due jobs the lower priority goes first, equal priorities in due order (the default
--          class is priority 0); a group never has more than `group concurrency` jobs leased (gc
--          counts them; every path that ends a lease frees its slot), groups with due jobs take
--          turns (one job per group per round) and get half of a claim when other due jobs wait
--          (all of it when none do), a paused group is in neither gw nor gr and is never taken
--          (groups.lua: no check here, so a pause costs the claim nothing), and with a group rate
--          limit a group starts at most max jobs per `per` ms on average (token bucket, bursts up
--          to max); with a rate limit no more than max jobs start in any window of `per` ms across
--          all workers; a taken id without a readable record is buried, never dropped (invariant
--          5); every argument is checked before the first write (invariant 11).
-- Steps (one include each, in this order; the context is read only, and what a step finds it
--          returns): claim-context.lua (keys, settings, clock; every check), claim-acks.lua,
--          claim-gate.lua (pause), claim-rate.lua, claim-classes.lua (default and prioritized,
--          with claim-groups.lua for grouped jobs), claim-lease.lua, claim-reap.lua,
--          claim-wake.lua (next wake).
-- How to change this script: correctness is decided by test/hotpath/claim.test.ts,
--          test/hotpath/claim-keys.test.ts (the KEYS order, here, in claim-context.lua and
--          claimKeys()), test/conformance/*.test.ts, test/integration/{claim-ahead, prepared-claim,
--          rate-limit, partitions, protocol, protocol-holes, script-inputs, start-after-lease,
--          retry-gaps}.test.ts, test/groups/, test/model/ (its mutants name lines of the steps:
--          move them with the code), test/lifecycle/, test/members/, test/record/ and
--          test/cluster/conformance.test.ts; run them with --maxWorkers=1. Cost is decided by
--          `npm run bench:redis-instructions -- --phase=claim --limit=50 --jobs=3000` and
--          `-- --phase=claim --limit=1 --jobs=1000` (instructions per job; a busy host does not
--          move them): a change may not raise either by more than 3 % without a reason in its
--          commit. A header change regenerates docs/PROTOCOL.md (scripts/protocol-tables.ts).

--!include prelude.lua
--!include args.lua
--!include events.lua
--!include record.lua
--!include wheel.lua
--!include place.lua
--!include bury.lua
--!include flow.lua
--!include reap-expired.lua
--!include skiplist.lua
--!include claim-context.lua
--!include claim-acks.lua
--!include claim-gate.lua
--!include claim-rate.lua
--!include claim-groups.lua
--!include claim-classes.lua
--!include claim-lease.lua
--!include claim-reap.lua
--!include claim-wake.lua

-- Each step is an include with its own header (inputs, outputs, cost). The context is read only;
-- what a step finds it returns, and this body hands it to the next.
local c, problem = claim_context()
if not c then return bad_arg(problem) end
-- Field/value pairs of the one HSET j of every record this call writes (completed and leased),
-- sized for one ack and one job (concurrency 1): a growing table rehashes at each power of two.
local records = { nil, nil, nil, nil }

-- 1. Acks first: their first write frees memory (ZREM), so a full Redis still lets a worker drain.
local ack_problem, letters, acked_grouped, acked_other, woke = claim_acks(c, records)
if ack_problem then return bad_arg(ack_problem) end
local out = { c.now, -1, 0, letters, 0 }
if c.limit <= 0 then
  claim_wake_acked(c, woke)
  return claim_reply(c, out, records)
end

-- 2. The gate. Paused: nothing is taken; expired leases still go back, so a dead worker's job
-- waits for the resume like any other.
local special, paused = claim_gate(c)
if paused then
  out[3] = 1
  claim_reap(c, false)
  return claim_reply(c, out, records)
end

-- 3. The rate window may lower what this call takes.
local limit, reopens = claim_rate_window(c, c.limit)

-- 4 and 5. Take from the classes and groups, and 6. lease.
local ids, dues, groups, next_at = claim_take(c, limit, special, acked_grouped, acked_other)
local leased = claim_lease(c, ids, dues, groups, records, out)
next_at = claim_after_window(c, next_at, reopens, limit <= 0)

-- 7. Not full: the earliest lease is when to look again, and expired ones are reaped now; what
-- they return is taken at once, so a job whose holder crashed starts in this same call.
if leased < c.limit then
  local returned, lease_at = claim_reap(c, true)
  if returned > 0 then
    next_at = claim_earliest(next_at, c.now)
    if leased < limit then
      local again_at
      ids, dues, groups, again_at = claim_take(c, limit - leased, (claim_gate(c)), acked_grouped, acked_other)
      next_at = claim_earliest(next_at, again_at)
      leased = leased + claim_lease(c, ids, dues, groups, records, out)
    end
  end
  next_at = claim_earliest(next_at, lease_at or claim_lease_head(c))
end

-- 8. The next wake.
out[5] = leased
out[2] = claim_wake(c, next_at, woke)
return claim_reply(c, out, records)
