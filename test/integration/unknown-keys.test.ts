/**
 * Unknown keys in any options object are refused with a ValidationError naming the key and the
 * nearest valid one, and nothing is written: a key silently ignored leaves a default in force
 * (`addBulk([{ payload, delay: 5000 }])` ran at once).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Queue, ValidationError, Worker } from '../../src/index.js';
import { nearestOption } from '../../src/option-names.js';
import { createDashboard } from '../../src/dashboard/index.js';
import { DelayqMetrics } from '../../src/metrics/index.js';
import { inspector, uniqueQueue, useRedis } from '../support/fixtures.js';

const redis = useRedis();
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** The ValidationError `act` throws or rejects with (fails the test when there is none). */
async function refusal(act: () => unknown): Promise<ValidationError> {
  try {
    await act();
  } catch (err) {
    expect(err).toBeInstanceOf(ValidationError);
    return err as ValidationError;
  }
  throw new Error('expected a ValidationError, got none');
}

/** Every Redis key of queue `name` (its config record included). */
async function keysOf(name: string): Promise<string[]> {
  const c = inspector(redis.url());
  try {
    return (await c.keys(`dq:{${name}}*`)).sort();
  } finally {
    await c.quit();
  }
}

describe('unknown keys', () => {
  it("addBulk: a delay beside the payload is refused, naming 'delay' and pointing to opts.delay; nothing written", async () => {
    const name = uniqueQueue('bulk-keys');
    const queue = new Queue<{ n: number }>(name, { connection: redis.url() });
    closers.push(() => queue.close());
    const err = await refusal(() =>
      queue.addBulk([{ payload: { n: 1 } }, { payload: { n: 2 }, delay: 5000 } as never]),
    );
    expect(err.message).toMatch(/^job 1: unknown addBulk entry key 'delay' \(did you mean 'opts\.delay'\?/);
    expect(err.message).toMatch(/opts: \{ payload, opts: \{ delay: \.\.\. \} \}/);
    expect(err.issues.map((i) => i.path)).toEqual(['delay']);
    // Not even the first, valid job was written; nor the queue's config record.
    expect(await keysOf(name)).toEqual([]);
    // A key that is no add option either: the nearest entry key.
    const typo = await refusal(() => queue.addBulk([{ paylod: { n: 3 } } as never]));
    expect(typo.message).toMatch(
      /^unknown addBulk entry key 'paylod' \(did you mean 'payload'\?\); known: payload, opts/,
    );
    expect(await keysOf(name)).toEqual([]);
  });

  it('add, its nested objects, reschedule, list and events(): each names the key and the nearest one', async () => {
    const name = uniqueQueue('add-keys');
    const queue = new Queue<string>(name, { connection: redis.url() });
    closers.push(() => queue.close());
    const cases: Array<[() => unknown, RegExp, string]> = [
      [
        () => queue.add('x', { dealy: 5 } as never),
        /unknown add option 'dealy' \(did you mean 'delay'\?\)/,
        'dealy',
      ],
      [
        () => queue.add('x', { backoff: { type: 'fixed', delay: 10, jiter: true } } as never),
        /unknown backoff key 'jiter' \(did you mean 'jitter'\?\)/,
        'backoff.jiter',
      ],
      [
        () => queue.add('x', { backoff: { type: 'fixed', delay: 10, max: 50 } } as never),
        /unknown backoff key 'max'; known: type, delay, jitter/,
        'backoff.max',
      ],
      [
        () => queue.add('x', { durability: { replicas: 1, timeout: 5 } } as never),
        /unknown durability option 'timeout' \(did you mean 'timeoutMs'\?/,
        'durability.timeout',
      ],
      [
        () => queue.reschedule('x', { delya: 5 } as never),
        /unknown reschedule option 'delya' \(did you mean 'delay'\?\)/,
        'delya',
      ],
      [
        () => queue.list('scheduled', { ofset: 5 } as never),
        /unknown page key 'ofset' \(did you mean 'offset'\?\)/,
        'ofset',
      ],
      [
        () => queue.events({ form: '0' } as never).next(),
        /unknown events\(\) option 'form' \(did you mean 'from'\?\)/,
        'form',
      ],
    ];
    for (const [act, message, path] of cases) {
      const err = await refusal(act);
      expect(err.message).toMatch(message);
      expect(err.issues.map((i) => i.path)).toEqual([path]);
    }
    // No job was written (list and events() read the queue, which records its config).
    expect((await keysOf(name)).filter((key) => !key.endsWith(':config'))).toEqual([]);
  });

  it('worker options and their nested objects, and close(): each names the key and the nearest one', async () => {
    const name = uniqueQueue('worker-keys');
    const make = (options: object) => () =>
      new Worker(name, async () => {}, { connection: redis.url(), ...options });
    const cases: Array<[() => unknown, RegExp, string]> = [
      [
        make({ concurency: 2 }),
        /unknown worker option 'concurency' \(did you mean 'concurrency'\?\)/,
        'concurency',
      ],
      [
        make({ keepCompleted: { count: 5, ages: '1h' } }),
        /unknown keepCompleted key 'ages' \(did you mean 'age'\?\)/,
        'keepCompleted.ages',
      ],
      [
        make({ rememberCompleted: { cont: 5 } }),
        /unknown rememberCompleted key 'cont' \(did you mean 'count'\?\)/,
        'rememberCompleted.cont',
      ],
      [
        make({ limit: { max: 5, perMs: 1000 } }),
        /unknown limit key 'perMs' \(did you mean 'per'\?/,
        'limit.perMs',
      ],
      [
        make({ events: { maxLength: 5 } }),
        /unknown events key 'maxLength' \(did you mean 'maxLen'\?\)/,
        'events.maxLength',
      ],
    ];
    for (const [act, message, path] of cases) {
      const err = await refusal(act);
      expect(err.message).toMatch(message);
      expect(err.issues.map((i) => i.path)).toEqual([path]);
    }
    const worker = new Worker(name, async () => {}, { connection: redis.url() });
    await worker.waitUntilReady();
    const err = await refusal(() => worker.close({ timeout: 5 } as never));
    expect(err.message).toMatch(/unknown close option 'timeout' \(did you mean 'timeoutMs'\?/);
    await worker.close();
  });

  it("worker groups, the dashboard's and the metrics' options: each names the key and the nearest one", async () => {
    const name = uniqueQueue('more-keys');
    const groups = await refusal(
      () => new Worker(name, async () => {}, { connection: redis.url(), groups: { concurency: 1 } as never }),
    );
    expect(groups.message).toMatch(/unknown groups key 'concurency' \(did you mean 'concurrency'\?\)/);
    const dashboard = await refusal(() => createDashboard({ connection: redis.url(), tokn: 't' } as never));
    expect(dashboard.message).toMatch(/unknown dashboard option 'tokn' \(did you mean 'token'\?\)/);
    expect(dashboard.issues.map((i) => i.path)).toEqual(['tokn']);
    const metrics = await refusal(() => new DelayqMetrics({ groupsTop: 5 } as never));
    expect(metrics.message).toMatch(/unknown metrics option 'groupsTop' \(did you mean 'groupsTopN'\?\)/);
    expect(await keysOf(name)).toEqual([]);
  });

  it('nearestOption: the Ms rule, another case, a small edit distance; nothing for a far miss', () => {
    const known = ['delay', 'runAt', 'timeoutMs', 'attempts', 'onExists'];
    expect(nearestOption('timeout', known)).toBe('timeoutMs');
    expect(nearestOption('runat', known)).toBe('runAt');
    expect(nearestOption('atempts', known)).toBe('attempts');
    expect(nearestOption('dealy', known)).toBe('delay');
    expect(nearestOption('onexist', known)).toBe('onExists');
    expect(nearestOption('colour', known)).toBeUndefined();
  });
});
