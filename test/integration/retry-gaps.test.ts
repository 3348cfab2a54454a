/**
 * Retry gaps have a floor and a ceiling: a failed job is due again no sooner than its backoff and
 * no later than its cap, and the worker then runs it promptly. The ceiling is measured without
 * depending on how loaded the machine is: the due time fail.lua sets (`retryAt`, Redis clock) is
 * compared with the local clock when the worker reports the failure, which is after fail.lua ran
 * (one machine, one clock).
 */
import { afterEach, expect, it } from 'vitest';
import { Queue, Worker } from '../../src/index.js';
import { uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';

const redis = useRedis();
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

// TIME is floored to whole ms and Date.now() is too; the two can differ by one tick.
const CLOCK_TICK_MS = 1;

interface Attempt {
  attempt: number;
  runAt: number;
  claimedAt: number;
  retryAt?: number;
  reportedAt?: number;
}

it('an exponential backoff with max: each gap at least the backoff, never above the cap, run promptly', async () => {
  const name = uniqueQueue('gaps');
  const queue = new Queue(name, { connection: redis.url() });
  closers.push(() => queue.close());
  const attempts: Attempt[] = [];
  const worker = new Worker(
    name,
    async (job) => {
      attempts.push({ attempt: job.attempt, runAt: job.runAt.getTime(), claimedAt: job.claimedAt.getTime() });
      throw new Error(`attempt ${job.attempt} fails`);
    },
    { connection: redis.url() },
  );
  closers.push(() => worker.close());
  worker.on('failed', (job, _error, retryAt) => {
    const a = attempts.find((x) => x.attempt === job.attempt);
    if (a) Object.assign(a, { retryAt: retryAt.getTime(), reportedAt: Date.now() });
  });
  let dead = false;
  worker.on('dead', () => void (dead = true));
  await worker.waitUntilReady();

  // Uncapped, the gaps would be 200, 400, 800; with max 300 they are 200, 300, 300.
  await queue.add('x', { attempts: 4, backoff: { type: 'exponential', delay: 200, max: 300 } });
  await waitFor(() => dead, { what: 'the fourth attempt to fail and bury the job' });

  expect(attempts.map((a) => a.attempt)).toEqual([1, 2, 3, 4]);
  const expected = [200, 300, 300];
  for (let i = 0; i < 3; i++) {
    const failed = attempts[i]!;
    const next = attempts[i + 1]!;
    expect(next.runAt).toBe(failed.retryAt);
    // Floor: fail.lua ran after the claim, so retryAt - claimedAt is at least the backoff.
    expect(next.runAt - failed.claimedAt).toBeGreaterThanOrEqual(expected[i]!);
    // Ceiling: fail.lua ran before the report, so retryAt - reportedAt is at most the backoff.
    expect(next.runAt - failed.reportedAt!).toBeLessThanOrEqual(expected[i]! + CLOCK_TICK_MS);
    // Never early, and run promptly once due (generous: two cores shared by several test runs).
    expect(next.claimedAt).toBeGreaterThanOrEqual(next.runAt);
    expect(next.claimedAt - next.runAt).toBeLessThan(2_000);
  }
});

it('a jittered backoff stays within 50–100% of its capped delay', async () => {
  const name = uniqueQueue('gaps');
  const queue = new Queue(name, { connection: redis.url() });
  closers.push(() => queue.close());
  const gaps: Array<{ low: number; high: number }> = [];
  const claimed = new Map<number, number>();
  const worker = new Worker(
    name,
    async (job) => {
      claimed.set(job.attempt, job.claimedAt.getTime());
      throw new Error('fails');
    },
    { connection: redis.url() },
  );
  closers.push(() => worker.close());
  worker.on('failed', (job, _error, retryAt) => {
    gaps.push({ low: retryAt.getTime() - Date.now(), high: retryAt.getTime() - claimed.get(job.attempt)! });
  });
  let dead = false;
  worker.on('dead', () => void (dead = true));
  await worker.waitUntilReady();

  // Capped delays 100, 200, 200: jittered into [50, 100], [100, 200], [100, 200].
  await queue.add('x', { attempts: 4, backoff: { type: 'exponential', delay: 100, max: 200, jitter: true } });
  await waitFor(() => dead, { what: 'the job to be buried' });
  const caps = [100, 200, 200];
  expect(gaps).toHaveLength(3);
  gaps.forEach((gap, i) => {
    expect(gap.low).toBeLessThanOrEqual(caps[i]! + CLOCK_TICK_MS);
    expect(gap.high).toBeGreaterThanOrEqual(caps[i]! / 2);
  });
});
