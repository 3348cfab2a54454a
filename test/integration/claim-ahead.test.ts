/**
 * Claim ahead (docs/ARCHITECTURE.md §5.3): a worker that slept until a due time claims
 * CLAIM_AHEAD_MS before it, and holds what it took until the job is due by its lower bound of the
 * server clock. The lease may start before runAt; the handler never does. One machine, one clock:
 * the handler's Date.now() is compared with runAt (Redis TIME), both whole ms of the same clock.
 */
import { afterEach, expect, it } from 'vitest';
import { Queue, Worker } from '../../src/index.js';
import { claim } from '../../src/operations/claim.js';
import { ZSET_LAYOUT } from '../../src/operations/wheel.js';
import { queueKeys } from '../../src/redis/keys.js';
import { CLAIM_AHEAD_MS } from '../../src/worker/start-gate.js';
import { inspector, serverNow, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';

const redis = useRedis();
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

const JOBS = 20;

it('jobs on an idle queue are leased ahead of their due time and started at it, never before', async () => {
  const name = uniqueQueue('ahead');
  const queue = new Queue<number>(name, { connection: redis.url() });
  closers.push(() => queue.close());
  const plain = inspector(redis.url());
  closers.push(async () => void plain.disconnect());
  const keys = queueKeys(name);
  const runs: Array<{ runAt: number; claimedAt: number; startedAt: number; leasedAt: number }> = [];
  const worker = new Worker<number>(
    name,
    async (job) => {
      const startedAt = Date.now();
      // The lease member is "<claims>.<claimed at>|<id>": when the script leased the job.
      const [member] = await plain.zrange(keys.leases, 0, 0);
      const leasedAt = Number(/^\d+\.(\d+)\|/.exec(member ?? '')?.[1]);
      runs.push({ runAt: job.runAt.getTime(), claimedAt: job.claimedAt.getTime(), startedAt, leasedAt });
    },
    { connection: redis.url() },
  );
  closers.push(() => worker.close());
  await worker.waitUntilReady();

  for (let i = 0; i < JOBS; i++) {
    await queue.add(i, { delay: 60 + (i % 7) });
    await waitFor(() => runs.length > i, { what: `job ${i} to run` });
  }

  for (const run of runs) {
    const what = JSON.stringify(run);
    expect(run.startedAt, `the handler started before the job was due: ${what}`).toBeGreaterThanOrEqual(
      run.runAt,
    );
    expect(run.claimedAt, `claimedAt before runAt: ${what}`).toBeGreaterThanOrEqual(run.runAt);
    expect(run.claimedAt, `claimedAt after the start: ${what}`).toBeLessThanOrEqual(run.startedAt);
    // The lease itself, by the script's TIME: at most the reach early, whatever the worker does.
    expect(run.leasedAt, `leased more than ${CLAIM_AHEAD_MS} ms early: ${what}`).toBeGreaterThanOrEqual(
      run.runAt - CLAIM_AHEAD_MS,
    );
  }
  // Each claim is sent 2 ms ahead by the worker's estimate of the server clock; a loaded machine
  // may delay some past the due time, but not all of them: otherwise nothing above tested the gate.
  const leasedAhead = runs.filter((r) => r.leasedAt < r.runAt).length;
  expect(leasedAhead, 'no job was leased ahead of its due time').toBeGreaterThan(0);
});

it('claim.lua leases jobs due within the reach it is given, no further, and refuses a reach over 1 s', async () => {
  const name = uniqueQueue('ahead-script');
  const plain = inspector(redis.url());
  closers.push(async () => void plain.disconnect());
  const keys = queueKeys(name);
  const queue = new Queue<number>(name, { connection: redis.url() });
  closers.push(() => queue.close());
  const [near, far] = await queue.addBulk([
    { payload: 1, opts: { delay: 200 } },
    { payload: 2, opts: { delay: 5_000 } },
  ]);
  const settings = {
    strategy: 'range' as const,
    leaseMs: 30_000,
    holder: 1,
    deadMaxCount: 0,
    deadMaxAgeMs: 0,
    rate: { max: 0, perMs: 0 },
    eventsCap: 0,
    zmscore: true,
    layout: ZSET_LAYOUT,
    limit: 10,
  };
  const plainClaim = await claim(plain, keys, settings);
  expect(plainClaim.jobs).toEqual([]);
  expect(plainClaim.nextAt).toBe(near!.runAt.getTime());

  const ahead = await claim(plain, keys, { ...settings, aheadMs: 1_000 });
  expect(ahead.jobs.map((j) => j.id)).toEqual([near!.id]);
  expect(ahead.jobs[0]!.claimedAt).toBeLessThan(near!.runAt.getTime());
  expect(ahead.nextAt).toBe(far!.runAt.getTime());
  // The reply ends with the script's TIME in µs: the same instant as `now`, to the µs.
  expect(Math.floor(ahead.nowUs! / 1000)).toBe(ahead.now);
  expect(Math.abs(ahead.now - (await serverNow(plain)))).toBeLessThan(1_000);

  await expect(claim(plain, keys, { ...settings, aheadMs: 1_001 })).rejects.toThrow(
    /claim ahead must be 0 to 1000 ms/,
  );
});
