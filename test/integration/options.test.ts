/**
 * One rule for durations in options: a name ending in Ms takes a number of milliseconds (a string
 * is refused, naming the number to write); any other duration takes ms or a duration string.
 * Option problems fill ValidationError.issues with the option's path, and a guessed spelling
 * (`lease`, `timeout`, `newerVersionDelayMs`) is refused naming the real one.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  Queue,
  Scheduler,
  SnoozeError,
  ValidationError,
  Worker,
  type WorkerOptions,
} from '../../src/index.js';
import { decodeRecord } from '../../src/record/index.js';
import { queueKeys } from '../../src/redis/keys.js';
import { drain } from '../../src/testing/index.js';
import { inspector, uniqueQueue, useRedis } from '../support/fixtures.js';

const redis = useRedis();
const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

function newQueue<T>(): Queue<T> {
  const queue = new Queue<T>(uniqueQueue('opts'), { connection: redis.url() });
  open.push(queue);
  return queue;
}

/** The ValidationError `act` throws (sync or async), or fails the test. */
async function refusal(act: () => unknown): Promise<ValidationError> {
  let thrown: unknown;
  try {
    await act();
  } catch (err) {
    thrown = err;
  }
  expect(thrown).toBeInstanceOf(ValidationError);
  return thrown as ValidationError;
}

function worker(options: Record<string, unknown>): Worker {
  const all: WorkerOptions = { connection: redis.url(), autorun: false, ...options };
  const w = new Worker(uniqueQueue('opts'), async () => {}, all);
  open.push(w);
  return w;
}

describe('Worker options', () => {
  it.each([
    ['leaseMs', '15s', 15_000],
    ['maxSleepMs', '1h', 3_600_000],
    ['reapIntervalMs', '5s', 5_000],
  ])('%s takes a number: %j is refused, naming %d', async (name, given, ms) => {
    const err = await refusal(() => worker({ [name]: given }));
    expect(err.message).toBe(
      `${name} takes a number of milliseconds (options named ...Ms do), got "${given}": write ${ms}`,
    );
    expect(err.issues).toEqual([{ path: name, message: err.message }]);
  });

  it('other durations take ms or a duration string', () => {
    expect(() =>
      worker({
        newerVersionDelay: '2m',
        limit: { max: 10, per: '1s' },
        backoff: { type: 'exponential', delay: '2s', max: '1m' },
        keepCompleted: { count: 10, age: '1h' },
        rememberCompleted: { age: '10m' },
        dead: { age: '7d' },
        leaseMs: 20_000,
      }),
    ).not.toThrow();
  });

  it.each([
    ['lease', 'leaseMs'],
    ['maxSleep', 'maxSleepMs'],
    ['newerVersionDelayMs', 'newerVersionDelay'],
  ])('the guess %s is refused naming %s', async (guess, real) => {
    const err = await refusal(() => worker({ [guess]: 1_000 }));
    expect(err.message).toMatch(new RegExp(`^unknown worker option '${guess}' \\(did you mean '${real}'\\?`));
    expect(err.issues).toEqual([{ path: guess, message: err.message }]);
  });

  it.each([
    [{ concurrency: 0 }, 'concurrency'],
    [{ leaseMs: 50 }, 'leaseMs'],
    [{ backoff: { type: 'fixed', delay: 'soon' } }, 'backoff.delay'],
    [{ backoff: { type: 'exponential', delay: 10, max: -1 } }, 'backoff.max'],
    [{ limit: { max: 0, per: '1s' } }, 'limit.max'],
    [{ keepCompleted: { count: -1 } }, 'keepCompleted.count'],
    [{ strategy: 'fastest' }, 'strategy'],
    [{ events: { maxLen: 0 } }, 'events'],
    [{ wheel: { granularityMs: 1 } }, 'wheel.granularityMs'],
  ])('%j: one issue at %s', async (options, path) => {
    const err = await refusal(() => worker(options));
    expect(err.issues).toEqual([{ path, message: err.message }]);
  });
});

describe('Queue options', () => {
  it.each([
    [{ version: 0 }, 'version'],
    [{ maxPayloadBytes: 1.5 }, 'maxPayloadBytes'],
    [{ strategy: 'fastest' }, 'strategy'],
    [{ partitions: 2, strategy: 'wheel' }, 'partitions'],
    [{ defaultJobOptions: { backoff: { type: 'fixed', delay: 'soon' } } }, 'backoff.delay'],
  ])('%j: one issue at %s', async (options, path) => {
    const err = await refusal(
      () => new Queue(uniqueQueue('opts'), { connection: redis.url(), ...options } as never),
    );
    expect(err.issues).toEqual([{ path, message: err.message }]);
  });

  it('an unknown option is refused rather than ignored (a misspelled connection would mean localhost)', async () => {
    const make = (options: object) => () => new Queue(uniqueQueue('opts'), options);
    const typo = await refusal(make({ conection: redis.url() }));
    expect(typo.message).toMatch(
      /^unknown queue option 'conection' \(did you mean 'connection'\?\); known: schema, connection, /,
    );
    expect(typo.issues).toEqual([{ path: 'conection', message: typo.message }]);
    const workerOnly = await refusal(make({ connection: redis.url(), leaseMs: 1_000 }));
    expect(workerOnly.issues.map((i) => i.path)).toEqual(['leaseMs']);
    const jobDefault = await refusal(make({ connection: redis.url(), defaultJobOptions: { timeout: 5 } }));
    expect(jobDefault.message).toMatch(/^unknown defaultJobOptions option 'timeout'/);
  });

  it('list and reschedule arguments name their field', async () => {
    const queue = newQueue<string>();
    const offset = await refusal(() => queue.list('scheduled', { offset: -1 }));
    expect(offset.issues.map((i) => i.path)).toEqual(['offset']);
    const when = await refusal(() => queue.reschedule('x', {}));
    expect(when.issues.map((i) => i.path)).toEqual(['delay']);
  });
});

describe('add options', () => {
  it('timeoutMs takes a number; delay and backoff take strings, stored as ms', async () => {
    const queue = newQueue<string>();
    const err = await refusal(() => queue.add('x', { timeoutMs: '30s' as unknown as number }));
    expect(err.message).toMatch(/^timeoutMs takes a number of milliseconds .* write 30000$/);
    expect(err.issues).toEqual([{ path: 'timeoutMs', message: err.message }]);
    const guess = await refusal(() => queue.add('x', { timeout: 5 } as never));
    expect(guess.message).toMatch(/^unknown add option 'timeout' \(did you mean 'timeoutMs'\?/);
    expect(guess.issues[0]?.path).toBe('timeout');
    const attempts = await refusal(() => queue.add('x', { attempts: 0 }));
    expect(attempts.issues).toEqual([{ path: 'attempts', message: attempts.message }]);
    expect(await queue.counts()).toMatchObject({ scheduled: 0 });

    const job = await queue.add('x', {
      delay: '10m',
      timeoutMs: 30_000,
      backoff: { type: 'exponential', delay: '2s', max: '1h', jitter: true },
    });
    const r = inspector(redis.url());
    const { header } = decodeRecord((await r.hgetBuffer(queueKeys(queue.name).records, job.id))!);
    await r.quit();
    // Parsed once, at add: the record carries the numbers (header fields T and B).
    expect(header).toMatchObject({
      timeoutMs: 30_000,
      backoff: { type: 'exponential', delay: 2_000, max: 3_600_000, jitter: true },
    });
  });
});

describe('schedule and Scheduler options', () => {
  it('schedule timeoutMs takes a number, grace a duration string; Scheduler maxSleepMs a number', async () => {
    const queue = newQueue<string>();
    const err = await refusal(() =>
      queue.schedule('s', { every: '1m' }, 'x', { timeoutMs: '30s' as unknown as number }),
    );
    expect(err.issues).toEqual([{ path: 'timeoutMs', message: err.message }]);
    expect(err.message).toContain('write 30000');
    const grace = await refusal(() => queue.schedule('s', { every: '1m' }, 'x', { grace: 'later' }));
    expect(grace.issues.map((i) => i.path)).toEqual(['grace']);
    await expect(
      queue.schedule('s', { every: '1m' }, 'x', { grace: '2s', timeoutMs: 30_000 }),
    ).resolves.toMatchObject({
      status: 'created',
    });

    const sleepy = await refusal(() => new Scheduler(queue, { maxSleepMs: '5s' as unknown as number }));
    expect(sleepy.issues).toEqual([{ path: 'maxSleepMs', message: sleepy.message }]);
  });
});

describe('testing helpers', () => {
  it('drain timeoutMs takes a number; a string is refused with its path', async () => {
    const queue = newQueue<string>();
    const err = await refusal(() => drain(queue, async () => {}, { timeoutMs: '10s' as unknown as number }));
    expect(err.issues).toEqual([{ path: 'timeoutMs', message: err.message }]);
  });

  it('drain reports a snoozed job in snoozed, not in failed, and does not wait for it', async () => {
    const queue = newQueue<string>();
    const { id } = await queue.add('x', { attempts: 1 });
    const out = await drain(queue, async () => {
      throw new SnoozeError('1h');
    });
    expect(out.snoozed.map((s) => [s.id, s.delayMs])).toEqual([[id, 3_600_000]]);
    expect(out.failed).toEqual([]);
    expect(out.dead).toEqual([]);
    expect(await queue.get(id)).toMatchObject({ state: 'scheduled', attempts: 0 });
  });
});
