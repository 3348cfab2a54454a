/**
 * Finished jobs as they were: get() of a completed, dead or cancelled job shows the attempts it
 * used, its max attempts, the due time of the run it ended in (runAt), when it ended and its result
 * or last error. The final records keep the claim block and max attempts (docs/PROTOCOL.md, "The
 * record"); records written without them (delayq 0.2) are still read.
 */
import { afterEach, expect, it } from 'vitest';
import { Queue, Worker } from '../../src/index.js';
import { queueKeys } from '../../src/redis/keys.js';
import { COMPLETED_RECORD, completedRecordWithResult, decodeRecord } from '../../src/record/index.js';
import { inspector, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';

const redis = useRedis();
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

function openQueue(name: string): Queue<string> {
  const queue = new Queue<string>(name, { connection: redis.url() });
  closers.push(() => queue.close());
  return queue;
}

it('a job completed on its 3rd of 5 attempts: attempts 3, maxAttempts 5, runAt of the 3rd run, result', async () => {
  const name = uniqueQueue('fin-done');
  const queue = openQueue(name);
  const runs: Array<{ attempt: number; runAt: number }> = [];
  const worker = new Worker<string, { sent: number }>(
    name,
    async (job) => {
      runs.push({ attempt: job.attempt, runAt: job.runAt.getTime() });
      if (job.attempt < 3) throw new Error(`receiver down (${job.attempt})`);
      return { sent: job.attempt };
    },
    { connection: redis.url(), keepCompleted: { count: 100, age: '1h' } },
  );
  closers.push(() => worker.close({ timeoutMs: 2_000 }));
  const { id } = await queue.add('a', { attempts: 5, backoff: { type: 'fixed', delay: 20 } });
  await waitFor(async () => (await queue.get(id))?.state === 'completed', { what: 'the job to complete' });

  const info = await queue.get<{ sent: number }>(id);
  expect(runs.map((r) => r.attempt)).toEqual([1, 2, 3]);
  expect(info).toMatchObject({ state: 'completed', attempts: 3, maxAttempts: 5, result: { sent: 3 } });
  expect(info?.runAt.getTime()).toBe(runs[2]!.runAt);
  expect(info?.runAt.getTime()).toBeGreaterThan(runs[0]!.runAt);
  expect(info?.finishedAt).toEqual(info?.completedAt);
  expect(info?.completedAt!.getTime()).toBeGreaterThanOrEqual(info!.runAt.getTime());
  // The handler's return type reaches the result's type.
  const sent: number | undefined = info?.result?.sent;
  expect(sent).toBe(3);
  // Nothing but the claim block, max attempts and the result is kept.
  const c = inspector(redis.url());
  closers.push(async () => void (await c.quit()));
  const record = await c.hgetBuffer(queueKeys(name).records, id);
  const decoded = decodeRecord(record!);
  expect(decoded.header).toMatchObject({ completed: true, hasResult: true, attempts: 3, maxAttempts: 5 });
  expect(JSON.parse(decoded.payload.toString())).toEqual({ sent: 3 });
});

it('a dead job: the attempts it used, its max attempts, the last run’s due time, when it died and why', async () => {
  const name = uniqueQueue('fin-dead');
  const queue = openQueue(name);
  const runAts: number[] = [];
  const worker = new Worker<string>(
    name,
    async (job) => {
      runAts.push(job.runAt.getTime());
      throw new Error(`no (${job.attempt})`);
    },
    { connection: redis.url() },
  );
  closers.push(() => worker.close({ timeoutMs: 2_000 }));
  const { id } = await queue.add('b', { attempts: 2, backoff: { type: 'fixed', delay: 20 } });
  await waitFor(async () => (await queue.get(id))?.state === 'dead', { what: 'the job to die' });
  const info = await queue.get(id);
  expect(info).toMatchObject({ state: 'dead', attempts: 2, maxAttempts: 2, payload: 'b' });
  expect(info?.lastError).toMatchObject({ message: 'no (2)', attempt: 2 });
  expect(info?.runAt.getTime()).toBe(runAts[1]);
  expect(info?.finishedAt).toEqual(info?.diedAt);
});

it('a job cancelled while it ran its 2nd attempt: attempts 2, its max attempts, that run’s due time', async () => {
  const name = uniqueQueue('fin-cancel');
  const queue = openQueue(name);
  const runAts: number[] = [];
  const worker = new Worker<string>(
    name,
    async (job) => {
      runAts.push(job.runAt.getTime());
      if (job.attempt === 1) throw new Error('first run fails');
      await new Promise((resolve) => job.signal.addEventListener('abort', resolve, { once: true }));
    },
    { connection: redis.url() },
  );
  // The handler's end after the cancel is refused and reported as a CancelledError.
  const errors: Error[] = [];
  worker.on('error', (err) => errors.push(err));
  closers.push(() => worker.close({ timeoutMs: 2_000 }));
  const { id } = await queue.add('c', { attempts: 4, backoff: { type: 'fixed', delay: 20 } });
  await waitFor(async () => (await queue.get(id))?.state === 'active' && runAts.length === 2, {
    what: 'the 2nd attempt to run',
  });
  expect(await queue.cancel(id)).toBe(true);
  const info = await queue.get(id);
  expect(info).toMatchObject({ state: 'cancelled', attempts: 2, maxAttempts: 4 });
  expect(info?.runAt.getTime()).toBe(runAts[1]);
  expect(info?.finishedAt).toEqual(info?.cancelledAt);
  expect(info?.lastError).toBeNull();
  await waitFor(() => errors.length > 0, { what: 'the late result to be refused' });
  expect(errors.map((e) => e.name)).toEqual(['CancelledError']);
});

it('a job cancelled before it ran: attempts 0, its max attempts; runAt is when it was cancelled', async () => {
  const name = uniqueQueue('fin-cancel-wait');
  const queue = openQueue(name);
  const { id } = await queue.add('d', { attempts: 7, delay: '1h' });
  expect(await queue.cancel(id)).toBe(true);
  const info = await queue.get(id);
  expect(info).toMatchObject({ state: 'cancelled', attempts: 0, maxAttempts: 7 });
  expect(info?.runAt).toEqual(info?.cancelledAt);
});

it('final records of delayq 0.2 (three bytes, no claim block) are still read', async () => {
  const name = uniqueQueue('fin-old');
  const queue = openQueue(name);
  const keys = queueKeys(name);
  const c = inspector(redis.url());
  closers.push(async () => void (await c.quit()));
  await queue.counts(); // records the queue's config
  await c
    .multi()
    .hset(keys.records, 'old', COMPLETED_RECORD, 'old-r', completedRecordWithResult(Buffer.from('42')))
    .zadd(keys.completed, 1767225600000, 'old', 1767225600001, 'old-r')
    .exec();
  expect(await queue.get('old')).toMatchObject({
    state: 'completed',
    attempts: 0,
    runAt: new Date(1767225600000),
    completedAt: new Date(1767225600000),
  });
  expect((await queue.get('old-r'))?.result).toBe(42);
});
