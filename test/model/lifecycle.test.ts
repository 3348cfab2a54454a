/**
 * Model-based property test (docs/TESTING.md) of the job lifecycle on layout 2
 * (docs/ARCHITECTURE.md), beside model.test.ts (the hot path: add modes, ack + claim in one
 * call, stale acks). Random sequences of add (keep or replace, with priorities), cancel (of waiting and running jobs), claim
 * (both zset strategies), ack (with or without a result), fail, extend, release, reap, progress,
 * reschedule, dead.retry, dead.remove, get, counts, trim, pause, resume and clock moves run against the real Lua scripts on a real redis-server and
 * against a pure TypeScript model (model.ts). After every command the replies and the whole Redis
 * state of the queue (every key: records decoded, waiting sets p/r/s, leases, final sets, errors,
 * progress, the pause key, counters; and the control messages P / R / C on the wake channel) must
 * equal the model's. A divergence fails with the shrunk command sequence, its seed and path.
 *
 * Time is the model's: clocked-client.ts runs the shipped scripts with their one TIME read swapped
 * for a counter, so commands can land exactly on a due time or a lease deadline.
 *
 * Replay a failure (its message and the test's title name the seed; test/support/property-seed.ts):
 * DELAYQ_SEED=<seed> [DELAYQ_SEED_PATH=<path>] npx vitest run test/model/lifecycle.test.ts -t 'never diverge'
 * Run longer: DELAYQ_MODEL_RUNS=2000 npx vitest run test/model/lifecycle.test.ts
 */
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { queueKeys } from '../../src/redis/keys.js';
import { uniqueQueue, useRedis } from '../support/fixtures.js';
import { mutantCheck, PROPERTY_SEED, seeded } from '../support/property-seed.js';
import { CLOCK_KEY, clockedClient } from './clocked-client.js';
import {
  AddCommand,
  AdvanceCommand,
  checkState,
  ClaimCommand,
  commandArbs,
  PauseCommand,
  ResumeCommand,
  type AddArg,
  type Real,
} from './lifecycle-commands.js';
import { LifecycleModel } from './lifecycle-model.js';

const redis = useRedis();

/** 2026-01-01T00:00:00.000Z: a realistic epoch-ms clock. */
const START = 1_767_225_600_000;
const RUNS = Number(process.env['DELAYQ_MODEL_RUNS'] ?? 120);
const MAX_COMMANDS = 80;

let plain: Redis;
let subscriber: Redis;
const received = new Map<string, string[]>();

beforeAll(async () => {
  plain = new Redis(redis.url(), { maxRetriesPerRequest: 1 });
  subscriber = new Redis(redis.url(), { maxRetriesPerRequest: 1 });
  subscriber.on('message', (channel: string, message: string) => received.get(channel)?.push(message));
  await Promise.all([plain.ping(), subscriber.ping()]);
});

afterAll(async () => {
  await Promise.all([plain?.quit(), subscriber?.quit()]);
});

/** Run `cmds` on a fresh queue, the model and the scripts side by side. */
async function runSequence(
  client: Redis,
  cmds: Iterable<fc.AsyncCommand<LifecycleModel, Real>>,
): Promise<void> {
  const name = uniqueQueue('lifecycle');
  const keys = queueKeys(name);
  const wakes: string[] = [];
  received.set(keys.wake, wakes);
  await subscriber.subscribe(keys.wake);
  await plain.set(CLOCK_KEY, START);
  const model = new LifecycleModel(START);
  const real: Real = { client, plain, keys, wakes, syncWakes: () => subscriber.ping(), serial: 0 };
  try {
    await checkState(model, real);
    await fc.asyncModelRun(() => ({ model, real }), cmds);
  } finally {
    await subscriber.unsubscribe(keys.wake);
    received.delete(keys.wake);
    await plain.del(...Object.values(keys));
  }
}

/** One property: a fresh queue per run, a random command sequence. */
function scriptsMatchModel(
  client: Redis,
): fc.IAsyncPropertyWithHooks<[Iterable<fc.AsyncCommand<LifecycleModel, Real>>]> {
  return fc.asyncProperty(fc.commands(commandArbs, { maxCommands: MAX_COMMANDS, size: 'medium' }), (cmds) =>
    runSequence(client, cmds),
  );
}

/** A job of an add, due `at` ms from now, 3 attempts, no backoff. */
function job(id: number, at: number, priority = 0, replace = false): AddArg {
  return { id, when: { kind: 'in', ms: at }, attempts: 3, backoff: undefined, priority, replace };
}

describe('model-based lifecycle: the Lua scripts against a pure TypeScript model', () => {
  test(`${RUNS} random command sequences never diverge from the model (seed ${PROPERTY_SEED})`, async () => {
    const client = clockedClient(plain);
    await fc.assert(scriptsMatchModel(client), seeded({ numRuns: RUNS }));
  }, 300_000);

  // Hand-built sequences through the issue-15 paths, replayed every run whatever the random ones reach.
  test('priorities among due jobs, a pause that holds them, and a resume naming the head', async () => {
    const dead = { count: 100_000, ageMs: 0 };
    const cmds = [
      new AddCommand([job(0, 0, 5), job(1, -10), job(2, 50, -5), job(3, -5, -5)]),
      new PauseCommand(),
      new AdvanceCommand(100),
      new ClaimCommand(3, 1_000, 0, 'zpopmin', dead),
      new ResumeCommand(),
      new ClaimCommand(3, 1_000, 0, 'range', dead),
      new ClaimCommand(1, 1_000, 1, 'zpopmin', dead),
    ];
    await runSequence(clockedClient(plain), cmds);
  });

  // The check above is only as good as its power to fail: each of these one-token mutations of a
  // shipped script must be caught. (No shrinking: only "found" matters here.) model.test.ts kills
  // the pause-gate, priority-order, replace-attempts and cancel-lease mutants; these are the paths
  // only this model reaches.
  test.each([
    {
      what: 'a lease still valid at its deadline for fail, release and progress (lease-check.lua off by one)',
      script: 'includes',
      from: 'if deadline and deadline > now then return nil end',
      to: 'if deadline and deadline >= now then return nil end',
    },
    {
      what: 'a prioritized job due exactly now not promoted (started late, by a claim later)',
      script: 'claim',
      from: `    if due > now then
      next_at = due`,
      to: `    if due >= now then
      next_at = due`,
    },
    {
      what: 'replace dropping the last-error flag of a job that failed before',
      script: 'add',
      from: 'if oh.has_error then new = rec_with_error_flag(new, rec_parse(new), true) end',
      to: 'if oh.has_error then new = rec_with_error_flag(new, rec_parse(new), false) end',
    },
    {
      what: 'cancel of a running job not telling its holder (no C message)',
      script: 'cancel',
      from: "if how == 'running' then redis.call('PUBLISH'",
      to: "if how == 'waiting' then redis.call('PUBLISH'",
    },
    {
      what: 'fail charging no attempt toward the dead set',
      script: 'fail',
      from: 'and h.attempts < h.max',
      to: 'and h.attempts <= h.max',
    },
    {
      what: 'release forgetting to hand the attempt back',
      script: 'includes',
      from: 'return rec_claimed(rec, h, h.attempts - 1,',
      to: 'return rec_claimed(rec, h, h.attempts - 0,',
    },
  ])(
    'the model test catches a mutant: $what',
    async ({ script, from, to }) => {
      let applied = 0;
      const client = clockedClient(plain, (name, source) => {
        if (script !== 'includes' && name !== script) return source;
        if (!source.includes(from)) return source;
        applied++;
        return source.split(from).join(to);
      });
      expect(applied, 'the mutation applies to the shipped source').toBeGreaterThan(0);
      const result = await fc.check(scriptsMatchModel(client), mutantCheck(500));
      expect(result.failed, `mutant survived ${result.numRuns} runs (seed ${result.seed})`).toBe(true);
    },
    120_000,
  );
});
