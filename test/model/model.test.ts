/**
 * Model-based property test (STYLE rule 14): random sequences of add (keep or replace), cancel (of
 * waiting and running jobs), reschedule, claim (both strategies), ack, fail, extend, release, reap,
 * dead.retry, dead.remove, get, counts, pause,
 * resume and clock moves run against the real Lua scripts on a real redis-server and against a pure TypeScript
 * model (model.ts). After every command the replies and the whole Redis state of the queue (every
 * key, the token counter, the wake messages) must equal the model's. A divergence fails with the
 * shrunk command sequence, its seed and path.
 *
 * Time is the model's: clocked-client.ts runs the shipped scripts with their one TIME read swapped
 * for a counter, so commands can land exactly on a due time or a lease deadline.
 *
 * Replay a failure: DELAYQ_MODEL_SEED=<seed> DELAYQ_MODEL_PATH=<path> npx vitest run test/model
 * Run longer: DELAYQ_MODEL_RUNS=2000 npx vitest run test/model
 */
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { queueKeys } from '../../src/redis/keys.js';
import { uniqueQueue, useRedis } from '../support/fixtures.js';
import { CLOCK_KEY, clockedClient } from './clocked-client.js';
import {
  AckCommand,
  AddCommand,
  AdvanceCommand,
  checkState,
  ClaimCommand,
  commandArbs,
  type Real,
} from './commands.js';
import { QueueModel } from './model.js';

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
  cmds: Iterable<fc.AsyncCommand<QueueModel, Real>>,
  events: boolean,
): Promise<void> {
  const name = uniqueQueue('model');
  const keys = queueKeys(name);
  const wakes: string[] = [];
  received.set(keys.wake, wakes);
  await subscriber.subscribe(keys.wake);
  await plain.set(CLOCK_KEY, START);
  const model = new QueueModel(START);
  model.eventsCap = events ? 1_000 : 0;
  const real: Real = {
    client,
    plain,
    keys,
    wakes,
    syncWakes: () => subscriber.ping(),
    serial: 0,
    eventsCap: model.eventsCap,
  };
  try {
    await checkState(model, real);
    await fc.asyncModelRun(() => ({ model, real }), cmds);
  } finally {
    await subscriber.unsubscribe(keys.wake);
    received.delete(keys.wake);
    await plain.del(...Object.values(keys));
  }
}

/** One property: a fresh queue per run, events on or off, a random command sequence. */
function scriptsMatchModel(
  client: Redis,
): fc.IAsyncPropertyWithHooks<[boolean, Iterable<fc.AsyncCommand<QueueModel, Real>>]> {
  return fc.asyncProperty(
    fc.boolean(),
    fc.commands(commandArbs, { maxCommands: MAX_COMMANDS, size: 'medium' }),
    (events, cmds) => runSequence(client, cmds, events),
  );
}

function replayOptions(): fc.Parameters<unknown> {
  const seed = process.env['DELAYQ_MODEL_SEED'];
  const path = process.env['DELAYQ_MODEL_PATH'];
  return {
    numRuns: RUNS,
    ...(seed !== undefined && { seed: Number(seed) }),
    ...(path !== undefined && { path }),
  };
}

/** Ack remembering no completed ids. */
const NO_REMEMBER = { count: 0, ageMs: 0 };

describe('model-based: the Lua scripts against a pure TypeScript model', () => {
  test(`${RUNS} random command sequences never diverge from the model`, async () => {
    const client = clockedClient(plain);
    await fc.assert(scriptsMatchModel(client), replayOptions());
  }, 300_000);

  // Sequences that once diverged (shrunk counterexamples and hand-built ones), replayed every run.
  test('regression: lowering completed-job retention while age trimming applies keeps only `count`', async () => {
    // Three jobs kept by one worker (count 3); then a worker keeping 1, none older than 2.5 s, acks
    // a fourth: the oldest goes by age, and the next two by count. ack.lua used to pick the age-dropped
    // job again for the count, leaving two.
    const now = { kind: 'delay' as const, ms: 0 };
    const cmds = [
      new AddCommand([0, 1, 2, 3].map((id) => ({ id, when: now, attempts: 1, backoff: undefined }))),
      new ClaimCommand(4, 60_000, 0, 'zpopmin', { count: 100, ageMs: 0 }, { max: 0, perMs: 0 }),
      new AckCommand(3, { count: 3, ageMs: 0 }, NO_REMEMBER),
      new AdvanceCommand(1_000),
      new AckCommand(2, { count: 3, ageMs: 0 }, NO_REMEMBER),
      new AdvanceCommand(1_000),
      new AckCommand(1, { count: 3, ageMs: 0 }, NO_REMEMBER),
      new AdvanceCommand(1_000),
      new AckCommand(0, { count: 1, ageMs: 2_500 }, NO_REMEMBER),
    ];
    await runSequence(clockedClient(plain), cmds, false);
  });

  test('regression: an add resent after its job completed writes nothing (the chaos run, seed 7)', async () => {
    // ioredis resends an add whose reply a dropped connection took; the job had already run. The
    // resend must find the id in the `done` set; once the id has aged out, the id is free again.
    const now = { kind: 'delay' as const, ms: 0 };
    const add = (): AddCommand => new AddCommand([{ id: 0, when: now, attempts: 1, backoff: undefined }]);
    const cmds = [
      add(),
      new ClaimCommand(1, 60_000, 0, 'zpopmin', { count: 100, ageMs: 0 }, { max: 0, perMs: 0 }),
      new AckCommand(0, { count: 0, ageMs: 0 }, { count: 10, ageMs: 1_000 }),
      add(),
      new AdvanceCommand(1_001),
      // A second job's ack trims the aged-out id; the add after it writes the job again.
      new AddCommand([{ id: 1, when: now, attempts: 1, backoff: undefined }]),
      new ClaimCommand(1, 60_000, 0, 'zpopmin', { count: 100, ageMs: 0 }, { max: 0, perMs: 0 }),
      new AckCommand(0, { count: 0, ageMs: 0 }, { count: 10, ageMs: 1_000 }),
      add(),
    ];
    await runSequence(clockedClient(plain), cmds, false);
  });

  // The check above is only as good as its power to fail: each of these one-token mutations of a
  // shipped script must be caught. (No shrinking: only "found" matters here.)
  test.each([
    {
      what: 'a lease still valid at its deadline (fencing off by one)',
      script: 'includes',
      from: 'if not deadline or deadline <= now then',
      to: 'if not deadline or deadline < now then',
    },
    {
      what: 'a job claimed 1 ms before it is due',
      script: 'claim-zpopmin',
      from: "redis.call('ZCOUNT', K.schedule, '-inf', now)",
      to: "redis.call('ZCOUNT', K.schedule, '-inf', now + 1)",
    },
    {
      what: 'a paused queue’s claim taking jobs (the pause gate never shut)',
      script: 'includes',
      from: "if redis.call('EXISTS', K.paused) == 1 then",
      to: "if redis.call('EXISTS', K.paused) == 2 then",
    },
    {
      what: 'fail charging no attempt toward the dead set',
      script: 'fail',
      from: 'if delay >= 0 and meta.a < meta.m then',
      to: 'if delay >= 0 and meta.a <= meta.m then',
    },
    {
      what: 'add writing a job again after it completed (a resent add)',
      script: 'add',
      from: 'if done_at then',
      to: 'if false then',
    },
    {
      what: 'replace keeping the old payload (debounce writing only the time)',
      script: 'add',
      from: "redis.call('HSET', K.jobs, id, envelope)",
      to: "redis.call('HSETNX', K.jobs, id, envelope)",
    },
    {
      what: 'replace resetting the attempts a waiting job has used',
      script: 'add',
      from: 'meta.a = old and old.a or 0',
      to: 'meta.a = old and 0 or 0',
    },
    {
      what: 'cancel of a running job leaving its lease behind (the holder could still ack)',
      script: 'cancel',
      from: "redis.call('HDEL', K.leases, id)",
      to: "redis.call('HGET', K.leases, id)",
    },
    {
      what: 'release forgetting to hand the attempt back',
      script: 'release',
      from: 'if meta.a > 0 then meta.a = meta.a - 1 end',
      to: '',
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
      const result = await fc.check(scriptsMatchModel(client), { numRuns: 500, endOnFailure: true });
      expect(result.failed, `mutant survived ${result.numRuns} runs`).toBe(true);
    },
    120_000,
  );
});
