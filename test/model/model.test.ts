/**
 * Model-based property test (docs/TESTING.md) of the layout-2 hot path: random sequences of add
 * (keep, replace, new; default class and priorities), claim (ack + claim in one call, both zset
 * strategies, stale acks included), extend, pause, resume, cancel and clock moves run against the
 * shipped Lua scripts on a real redis-server and against a pure TypeScript model (model.ts). After
 * every command the replies and the queue's state (waiting class sets, lease members, final
 * records, every record's header and payload, the paused flag, the `added` counter) must equal the
 * model's. Not modelled here: fail, release, reschedule and dead-letter management (their own
 * tests in test/lifecycle), events, next_at.
 *
 * Time is the model's: clocked-client.ts runs the shipped scripts with their TIME read swapped for
 * a counter, so commands land exactly on a due time or a lease deadline.
 *
 * Replay a failure (its message and the test's title name the seed; test/support/property-seed.ts):
 * DELAYQ_SEED=<seed> [DELAYQ_SEED_PATH=<path>] npx vitest run test/model/model.test.ts -t 'never diverge'
 * Run longer: DELAYQ_MODEL_RUNS=2000 npx vitest run test/model
 */
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { queueKeys } from '../../src/redis/keys.js';
import { uniqueQueue, useRedis } from '../support/fixtures.js';
import { mutantCheck, PROPERTY_SEED, seeded } from '../support/property-seed.js';
import { CLOCK_KEY, clockedClient } from './clocked-client.js';
import { AddCommand, AdvanceCommand, checkState, ClaimCommand, commandArbs, type Real } from './commands.js';
import { HotModel } from './model.js';

const redis = useRedis();

/** 2026-01-01T00:00:00.000Z: a realistic epoch-ms clock. */
const START = 1_767_225_600_000;
const RUNS = Number(process.env['DELAYQ_MODEL_RUNS'] ?? 100);
const MAX_COMMANDS = 60;

let plain: Redis;

beforeAll(async () => {
  plain = new Redis(redis.url(), { maxRetriesPerRequest: 1 });
  await plain.ping();
});

afterAll(async () => {
  await plain?.quit();
});

/** Run `cmds` on a fresh queue, the model and the scripts side by side. */
async function runSequence(client: Redis, cmds: Iterable<fc.AsyncCommand<HotModel, Real>>): Promise<void> {
  const keys = queueKeys(uniqueQueue('model'));
  await plain.set(CLOCK_KEY, START);
  const model = new HotModel(START);
  const real: Real = { client, plain, keys, serial: 0 };
  try {
    await checkState(model, real);
    await fc.asyncModelRun(() => ({ model, real }), cmds);
  } finally {
    await plain.del(...Object.values(keys));
  }
}

function scriptsMatchModel(
  client: Redis,
): fc.IAsyncPropertyWithHooks<[Iterable<fc.AsyncCommand<HotModel, Real>>]> {
  return fc.asyncProperty(fc.commands(commandArbs, { maxCommands: MAX_COMMANDS, size: 'medium' }), (cmds) =>
    runSequence(client, cmds),
  );
}

describe('model-based: the layout-2 hot-path scripts against a pure TypeScript model', () => {
  test(`${RUNS} random command sequences never diverge from the model (seed ${PROPERTY_SEED})`, async () => {
    await fc.assert(scriptsMatchModel(clockedClient(plain)), seeded({ numRuns: RUNS }));
  }, 300_000);

  test('a hand-built sequence: priorities, a lease lost and reaped on claim, a stale ack refused', async () => {
    const cmds = [
      new AddCommand([
        { id: 0, offset: 0, priority: 0, attempts: 3, mode: 'keep' },
        { id: 1, offset: 0, priority: -5, attempts: 3, mode: 'keep' },
        { id: 2, offset: 10, priority: 3, attempts: 1, mode: 'keep' },
      ]),
      new ClaimCommand(1, 50, 'zpopmin', []),
      new AdvanceCommand(50),
      new ClaimCommand(3, 500, 'range', [0]),
      new AdvanceCommand(10),
      new ClaimCommand(3, 500, 'range', [1, 2]),
    ];
    await runSequence(clockedClient(plain), cmds);
  });

  // Two divergences the random sequences found (DELAYQ_SEED=310031 and =13 among others: 7 of
  // seeds 1-60 at 100 sequences each; lifecycle.test.ts met the second at seed 21), shrunk to
  // these and fixed in the scripts: a completion earlier in the same call is remembered by the
  // acks step (claim-acks.lua), and a completed id created again by a replace does not start its
  // claim count over (add-existing.lua, add_fence_recreated).
  const b = 1; // ID_POOL[1]: 'b'
  test('a resent ack of an old lease, after the same id was created again and its new lease acked earlier in the same call, is ALREADY', async () => {
    // The acks write c after their loop: the resend rule ("c has the id") must also see a
    // completion earlier in the same call.
    await runSequence(clockedClient(plain), [
      new AddCommand([{ id: b, offset: -1, priority: 0, attempts: 1, mode: 'keep' }]),
      new ClaimCommand(1, 50, 'zpopmin', []),
      new ClaimCommand(0, 50, 'zpopmin', [0]),
      new AddCommand([{ id: b, offset: -1, priority: 0, attempts: 1, mode: 'replace' }]),
      new AdvanceCommand(1),
      new ClaimCommand(1, 50, 'zpopmin', []),
      // Handles: [first lease, second lease]. The second's ack applies; the first's is a resend of
      // an ack that applied (its known deadline is still ahead): ALREADY.
      new ClaimCommand(0, 50, 'zpopmin', [1, 0]),
    ]);
  });

  test('a job created again and claimed in the ms of its first claim gets a lease member of its own, so a resent ack of the old lease cannot complete it', async () => {
    // With claims starting over at 0, its first lease token would repeat the old one's
    // ("1.<ms>") when claimed in the same ms, and the acks' fast path, trusting the known deadline
    // the old ack carries, would remove the new lease.
    await runSequence(clockedClient(plain), [
      new AddCommand([{ id: b, offset: -1, priority: 0, attempts: 1, mode: 'keep' }]),
      new ClaimCommand(1, 500, 'zpopmin', []),
      new ClaimCommand(0, 50, 'zpopmin', [0]),
      new AddCommand([{ id: b, offset: 0, priority: 0, attempts: 1, mode: 'replace' }]),
      new ClaimCommand(1, 50, 'zpopmin', []),
      new AdvanceCommand(50),
      // The old lease's ack again (known deadline +500): the new lease expired, nothing applies.
      new ClaimCommand(0, 50, 'zpopmin', [0]),
    ]);
  });

  // The check above is only as good as its power to fail: each of these one-token mutations of a
  // shipped script must be caught. (No shrinking: only "found" matters here.)
  test.each([
    {
      what: 'a lease still valid at its deadline (fencing off by one)',
      script: 'claim',
      from: 'score > now and CLAIM_ACK_IN_A',
      to: 'score >= now and CLAIM_ACK_IN_A',
    },
    {
      what: 'a job claimed 1 ms before it is due',
      script: 'claim',
      from: 'cutoff_text = cutoff == now and now_text or ms_text(cutoff),',
      to: 'cutoff_text = ms_text(cutoff + 1),',
    },
    {
      what: 'a claim ahead reaching 1 ms further than it was asked',
      script: 'claim',
      from: 'local cutoff = K.wi and now or now + s.ahead_ms',
      to: 'local cutoff = K.wi and now or now + s.ahead_ms + (s.ahead_ms > 0 and 1 or 0)',
    },
    {
      what: 'a claim ahead ignored (only due jobs taken)',
      script: 'claim',
      from: 'local cutoff = K.wi and now or now + s.ahead_ms',
      to: 'local cutoff = now',
    },
    {
      what: 'a paused queue’s claim taking jobs (the pause gate never shut)',
      script: 'claim',
      from: "special > 0 and redis.call('EXISTS', K.z) == 1",
      to: "special > 0 and redis.call('EXISTS', K.z) == 2",
    },
    {
      what: 'priorities served in reverse (higher first)',
      script: 'claim',
      from: 'if r_score and (not d_score or r_score < d_score) then',
      to: 'if r_score and (not d_score or r_score > d_score) then',
    },
    {
      what: 'replace keeping the old job (debounce writing nothing)',
      script: 'add',
      from: "if mode ~= 'r' or not oh then return code, add_waiting_due(K, id, oh) end",
      to: "if mode ~= 'R' or not oh then return code, add_waiting_due(K, id, oh) end",
    },
    {
      what: 'replace resetting the attempts a waiting job has used',
      script: 'add',
      from: 'new = rec_claimed(new, h, oh.attempts, oh.claims, oh.claimed_at, oh.run_due, oh.holder)',
      to: 'new = rec_claimed(new, h, 0, oh.claims, oh.claimed_at, oh.run_due, oh.holder)',
    },
    {
      what: 'cancel of a running job leaving its lease behind (the holder could still ack)',
      script: 'cancel',
      from: "redis.call('ZREM', K.a, member)",
      to: "redis.call('ZSCORE', K.a, member)",
    },
  ])(
    'the model test catches a mutant: $what',
    async ({ script, from, to }) => {
      let applied = 0;
      const client = clockedClient(plain, (name, source) => {
        if (name !== script || !source.includes(from)) return source;
        applied++;
        return source.split(from).join(to);
      });
      expect(applied, 'the mutation applies to the shipped source').toBeGreaterThan(0);
      const result = await fc.check(scriptsMatchModel(client), mutantCheck(1_500));
      expect(result.failed, `mutant survived ${result.numRuns} runs (seed ${result.seed})`).toBe(true);
    },
    120_000,
  );
});
