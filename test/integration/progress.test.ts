/**
 * job.progress() against a real redis-server: visible through queue.get() while the job runs,
 * coalesced (a tight loop of reports costs a couple of writes, counted by keyspace notifications, and the last
 * value is the one stored), refused when not JSON data or over the cap (nothing written), fenced by
 * the lease member (progress.lua refuses a lost holder), and deleted when the attempt ends.
 */
import { afterEach, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import {
  LeaseLostError,
  ProgressTooLargeError,
  Queue,
  ValidationError,
  Worker,
  type Job,
} from '../../src/index.js';
import { queueKeys } from '../../src/redis/keys.js';
import { inspector, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';

const redis = useRedis();
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

function client(): Redis {
  const c = inspector(redis.url());
  closers.push(async () => void (await c.quit()));
  return c;
}

function setup<T>(handler: (job: Job<T>) => Promise<unknown>, options: { attempts?: number } = {}) {
  const name = uniqueQueue('pg');
  const queue = new Queue<T>(name, {
    connection: redis.url(),
    defaultJobOptions: { attempts: options.attempts ?? 1 },
  });
  closers.push(() => queue.close());
  const worker = new Worker<T>(name, handler, { connection: redis.url() });
  closers.push(() => worker.close({ timeoutMs: 2_000 }));
  return { name, queue, worker, keys: queueKeys(name) };
}

/** A gate the test opens to let a handler finish. */
function gate(): { wait: Promise<void>; open: () => void } {
  let open = () => {};
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

/**
 * Counts the HSETs Redis runs on `key` (from any script), by keyspace notifications: this test's own
 * redis-server is set to publish hash events.
 */
async function countWrites(key: string): Promise<{ count: () => number; stop: () => void }> {
  await client().config('SET', 'notify-keyspace-events', 'Kh');
  const sub = client();
  let n = 0;
  sub.on('message', (_channel: string, event: string) => {
    if (event === 'hset') n++;
  });
  await sub.subscribe(`__keyspace@0__:${key}`);
  return { count: () => n, stop: () => {} };
}

it('a running job’s progress is shown by queue.get(), and deleted when it completes', async () => {
  const release = gate();
  const { queue, keys } = setup<string>(async (job) => {
    await job.progress({ pct: 50, stage: 'resize' });
    await release.wait;
  });
  const { id } = await queue.add('img');
  const running = await waitFor(async () => {
    const info = await queue.get(id);
    return info && 'progress' in info ? info : null;
  });
  expect(running.state).toBe('active');
  expect(running.progress).toEqual({ pct: 50, stage: 'resize' });
  release.open();
  await waitFor(async () => (await queue.get(id))?.state === 'completed', { what: 'the job to complete' });
  expect(await client().exists(keys.progress)).toBe(0);
});

it('100 reports in a tight loop: a few writes, and the last value is the one stored', async () => {
  const release = gate();
  let reported = false;
  const { queue, keys } = setup<string>(async (job) => {
    await Promise.all(Array.from({ length: 100 }, (_, i) => job.progress({ done: i + 1, of: 100 })));
    reported = true;
    await release.wait;
  });
  const writes = await countWrites(keys.progress);
  closers.push(async () => writes.stop());
  const { id } = await queue.add('batch');
  await waitFor(() => reported, { what: 'the 100 reports to settle' });
  expect((await queue.get(id))?.progress).toEqual({ done: 100, of: 100 });
  // Notifications arrive after the command ran; wait for the trailing write's to be seen.
  await waitFor(() => writes.count() >= 2, { what: 'the writes to be notified' });
  expect(writes.count()).toBeLessThanOrEqual(3);
  release.open();
  await waitFor(async () => (await queue.get(id))?.state === 'completed', { what: 'the job to complete' });
});

it('values that are not JSON data or are over the cap are refused with typed errors; nothing is written', async () => {
  const refused: unknown[] = [];
  let tried = false;
  const release = gate();
  const cycle: Record<string, unknown> = {};
  cycle.self = cycle;
  const { queue, keys } = setup<string>(async (job) => {
    for (const bad of [() => 1, 10n, cycle, { a: undefined }, new Date(), 'x'.repeat(5_000)]) {
      try {
        await job.progress(bad);
        refused.push('accepted');
      } catch (err) {
        refused.push(err);
      }
    }
    tried = true;
    await release.wait;
  });
  const writes = await countWrites(keys.progress);
  closers.push(async () => writes.stop());
  const { id } = await queue.add('bad');
  await waitFor(() => tried, { what: 'the bad reports' });
  expect(refused.slice(0, 5).every((e) => e instanceof ValidationError)).toBe(true);
  expect(refused[5]).toBeInstanceOf(ProgressTooLargeError);
  const info = await queue.get(id);
  expect(info?.state).toBe('active');
  expect(info && 'progress' in info).toBe(false);
  expect(writes.count()).toBe(0);
  release.open();
});

// progress.lua's own fencing (an older claim's member, an expired lease, a cancelled job, the cap)
// is asserted against seeded records in test/lifecycle/cancel-progress.test.ts.

it('a handler whose lease was lost cannot report: job.progress() rejects with LeaseLostError', async () => {
  const outcome: unknown[] = [];
  const { queue, worker, keys } = setup<string>(
    async (job) => {
      await job.progress('before');
      // Take the lease away as a reaper would after an expiry (its member leaves the lease
      // ZSET), then report again.
      const c = client();
      const members = (await c.zrange(keys.leases, 0, -1)).filter((m) => m.endsWith(`|${job.id}`));
      await c.zrem(keys.leases, ...members);
      try {
        await job.progress('after');
        outcome.push('written');
      } catch (err) {
        outcome.push(err);
      }
    },
    { attempts: 1 },
  );
  worker.on('error', () => {});
  const { id } = await queue.add('x');
  await waitFor(() => outcome.length === 1, { what: 'the second report' });
  expect(outcome[0]).toBeInstanceOf(LeaseLostError);
  expect(await client().hget(keys.progress, id)).toBe('"before"');
});

it('progress is deleted when the attempt fails, whether retried or buried', async () => {
  const c = client();
  const seenAtStart: Array<string | null> = [];
  const { queue, worker, keys } = setup<string>(
    async (job) => {
      // What the previous attempt left, seen by the retry before it reports anything.
      seenAtStart.push(await c.hget(keys.progress, job.id));
      await job.progress({ attempt: job.attempt });
      throw new Error(`attempt ${job.attempt} fails`);
    },
    { attempts: 2 },
  );
  const dead: string[] = [];
  worker.on('dead', (_job, _err, id) => dead.push(id));
  const { id } = await queue.add('x', { backoff: { type: 'fixed', delay: 10 } });
  await waitFor(() => dead.includes(id), { what: 'the job to die' });
  expect(seenAtStart).toEqual([null, null]);
  expect((await queue.get(id))?.state).toBe('dead');
  expect(await c.exists(keys.progress)).toBe(0);
});
