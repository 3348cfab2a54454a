/**
 * A job whose lease ran out between its claim and its handler's start (here: another handler
 * blocks the event loop past the lease right after the claim that took both) is not started: the
 * reaper hands it to another claim, and a start now would run it twice at once. Found by the
 * chaos run (seed 7): a job started 25 ms after its lease had ended while another worker ran it.
 */
import { afterEach, expect, it } from 'vitest';
import { LeaseLostError, Queue, Worker } from '../../src/index.js';
import { uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';

const redis = useRedis();
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

const LEASE_MS = 400;

it('a job whose lease ended before its handler could start is not started; it runs once, later', async () => {
  const name = uniqueQueue('start-after-lease');
  const queue = new Queue<string>(name, { connection: redis.url() });
  closers.push(() => queue.close());
  const runs: Array<{ payload: string; attempt: number }> = [];
  const lost: string[] = [];
  const worker = new Worker<string>(
    name,
    async (job) => {
      runs.push({ payload: job.payload, attempt: job.attempt });
      if (job.payload === 'blocker' && job.attempt === 1) {
        // Blocks this process's event loop (no await) past both leases of the claim.
        const until = Date.now() + LEASE_MS * 3;
        while (Date.now() < until);
      }
    },
    { connection: redis.url(), concurrency: 2, leaseMs: LEASE_MS, autorun: false },
  );
  worker.on('error', (err) => {
    if (err instanceof LeaseLostError) lost.push(err.message);
  });
  closers.push(() => worker.close());
  // Both due before the worker claims, so one claim takes both: the blocker first (earlier due).
  await queue.add('blocker', { id: 'a' });
  await queue.add('victim', { id: 'b' });
  await worker.run();
  await waitFor(() => runs.some((r) => r.payload === 'victim'), {
    what: 'the victim to run',
    timeoutMs: 10_000,
  });
  const victim = runs.filter((r) => r.payload === 'victim');
  // Never started under the claim whose lease ran out: its first start is a later attempt.
  expect(victim.map((r) => r.attempt)).toEqual([2]);
  expect(lost.some((m) => /expired before its handler started/.test(m))).toBe(true);
});
