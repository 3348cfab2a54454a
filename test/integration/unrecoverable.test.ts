/**
 * UnrecoverableError: a handler ends its job for good. The job is dead after one run with the
 * error as its reason and its attempts left unused, also when the error comes from a second copy
 * of the package (recognised by its code); thrown after the lease was lost, it is refused like any
 * late result (fencing), and the job's next holder runs it.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  CancelledError,
  LeaseLostError,
  Queue,
  SnoozeError,
  UnrecoverableError,
  Worker,
} from '../../src/index.js';
import { queueKeys } from '../../src/redis/keys.js';
import { inspector, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';
import { loadSecondCopy } from '../support/second-copy.js';

const redis = useRedis();
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

function open<T>(name: string, handler: ConstructorParameters<typeof Worker<T>>[1], leaseMs?: number) {
  const worker = new Worker<T>(name, handler, {
    connection: redis.url(),
    ...(leaseMs === undefined ? {} : { leaseMs, concurrency: 1 }),
  });
  closers.push(() => worker.close({ timeoutMs: 2_000 }));
  return worker;
}

it('an UnrecoverableError on attempt 1 of 5: dead after one run, its reason recorded, 4 attempts unused', async () => {
  const name = uniqueQueue('unrec');
  const queue = new Queue<string>(name, { connection: redis.url() });
  closers.push(() => queue.close());
  const runs: number[] = [];
  const dead: Array<{ id: string; error: Error }> = [];
  const worker = open<string>(name, async (job) => {
    runs.push(job.attempt);
    throw new UnrecoverableError(`bad address: ${job.payload}`);
  });
  worker.on('dead', (job, error, id) => dead.push({ id, error }));
  const { id } = await queue.add('nowhere@', { attempts: 5, backoff: { type: 'fixed', delay: 10 } });
  await waitFor(() => dead.length === 1, { what: 'the job to die' });

  expect(runs).toEqual([1]);
  expect(dead[0]?.id).toBe(id);
  expect(dead[0]?.error).toBeInstanceOf(UnrecoverableError);
  const info = await queue.get(id);
  expect(info?.state).toBe('dead');
  expect(info?.attempts).toBe(1);
  expect(info?.maxAttempts).toBe(5);
  expect(info?.lastError).toMatchObject({
    name: 'UnrecoverableError',
    message: 'bad address: nowhere@',
    attempt: 1,
    unrecoverable: true,
  });
  const c = inspector(redis.url());
  closers.push(async () => void (await c.quit()));
  const keys = queueKeys(name);
  expect(await c.zrange(keys.dead, 0, -1)).toEqual([id]);
  expect(await c.zcard(keys.waiting)).toBe(0);
  expect(await c.zcard(keys.leases)).toBe(0);
});

describe('errors from a second copy of the package (a dependency that bundles its own delayq)', () => {
  let second: Awaited<ReturnType<typeof loadSecondCopy>>;
  beforeAll(async () => {
    second = await loadSecondCopy();
  });
  afterAll(() => second.remove());

  it('its UnrecoverableError is recognised by its code: the job is dead at once, its attempts unused', async () => {
    const { UnrecoverableError: Foreign } = second.delayq;
    // Really another class: instanceof does not see it, only the code can.
    expect(new Foreign('x')).not.toBeInstanceOf(UnrecoverableError);
    const name = uniqueQueue('unrec-copy');
    const queue = new Queue<string>(name, { connection: redis.url() });
    closers.push(() => queue.close());
    const runs: number[] = [];
    const dead: Error[] = [];
    const worker = open<string>(name, async (job) => {
      runs.push(job.attempt);
      throw new Foreign(`bad address: ${job.payload}`);
    });
    worker.on('dead', (_job, error) => dead.push(error));
    const { id } = await queue.add('nowhere@', { attempts: 5, backoff: { type: 'fixed', delay: 10 } });
    await waitFor(() => dead.length === 1, { what: 'the job to die' });
    expect(runs).toEqual([1]);
    expect(await queue.get(id)).toMatchObject({
      state: 'dead',
      attempts: 1,
      maxAttempts: 5,
      lastError: { name: 'UnrecoverableError', message: 'bad address: nowhere@', unrecoverable: true },
    });
  });

  it('its SnoozeError is recognised by its code and delay: the job is due again, the attempt uncounted', async () => {
    const { SnoozeError: Foreign } = second.delayq;
    expect(new Foreign('1s')).not.toBeInstanceOf(SnoozeError);
    const name = uniqueQueue('snooze-copy');
    const queue = new Queue<string>(name, { connection: redis.url() });
    closers.push(() => queue.close());
    const runs: number[] = [];
    const worker = open<string>(name, async (job) => {
      runs.push(job.attempt);
      if (runs.length === 1) throw new Foreign(50);
    });
    const snoozed: number[] = [];
    worker.on('snoozed', (_job, _runAt, delayMs) => snoozed.push(delayMs));
    const { id } = await queue.add('x', { attempts: 1 });
    await waitFor(async () => (await queue.get(id))?.state === 'completed', { what: 'the job to complete' });
    expect(runs).toEqual([1, 1]);
    expect(snoozed).toEqual([50]);
  });
});

it('a plain Error on the same job is retried: only UnrecoverableError skips the attempts left', async () => {
  const name = uniqueQueue('recov');
  const queue = new Queue<string>(name, { connection: redis.url() });
  closers.push(() => queue.close());
  const runs: number[] = [];
  const worker = open<string>(name, async (job) => {
    runs.push(job.attempt);
    if (job.attempt < 3) throw new Error('try again');
  });
  const completed: string[] = [];
  worker.on('completed', (job) => completed.push(job.id));
  const { id } = await queue.add('x', { attempts: 5, backoff: { type: 'fixed', delay: 10 } });
  await waitFor(() => completed.includes(id), { what: 'the job to complete' });
  expect(runs).toEqual([1, 2, 3]);
});

it('an UnrecoverableError thrown after the lease was lost is refused; the next holder runs the job', async () => {
  const name = uniqueQueue('unrec-late');
  const queue = new Queue<string>(name, { connection: redis.url() });
  closers.push(() => queue.close());
  const errors: Error[] = [];
  const completions: number[] = [];
  let blocked = false;
  const blocker = open<string>(
    name,
    async (job) => {
      if (job.attempt === 1) {
        blocked = true;
        const until = Date.now() + 700;
        while (Date.now() < until) {
          // Block the event loop past the 300 ms lease: the lease keeper cannot renew it.
        }
        throw new UnrecoverableError('too late to matter');
      }
    },
    300,
  );
  blocker.on('error', (err) => errors.push(err));
  blocker.on('completed', (job) => completions.push(job.attempt));
  await blocker.waitUntilReady();
  const { id } = await queue.add('x', { id: 'late', attempts: 3 });
  await waitFor(() => blocked, { what: 'attempt 1 to run' });
  const rescuer = open<string>(name, async () => {}, 5_000);
  rescuer.on('completed', (job) => completions.push(job.attempt));
  await waitFor(
    () =>
      errors.some((e) => e instanceof LeaseLostError && e.jobId === id && /result refused/.test(e.message)),
    { what: 'the late UnrecoverableError to be refused' },
  );
  await waitFor(async () => completions.length >= 1 && (await queue.get(id))?.state === 'completed', {
    what: 'attempt 2 to complete',
  });
  expect(completions).toEqual([2]);
  const c = inspector(redis.url());
  closers.push(async () => void (await c.quit()));
  expect(await c.zcard(queueKeys(name).dead)).toBe(0);
});

it('CancelledError names the job and says its result will not be applied', () => {
  const err = new CancelledError('job-7');
  expect(err.code).toBe('DELAYQ_CANCELLED');
  expect(err.name).toBe('CancelledError');
  expect(err.jobId).toBe('job-7');
  expect(err.message).toMatch(/job job-7 was cancelled.*not be completed, retried or dead-lettered/);
});
