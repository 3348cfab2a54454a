// A Sentinel-managed master and replica: Queue and Worker connect through three sentinels; the
// master is killed mid-run, the sentinels promote the replica, and the queue carries on.
import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue, Worker } from '../../src/index.js';
import { startRedisSentinel, type RedisSentinelSetup } from '../support/redis-sentinel.js';
import { uniqueQueue, waitFor } from '../support/fixtures.js';
import { internals } from '../support/internals.js';

let setup: RedisSentinelSetup | undefined;
beforeAll(async () => {
  setup = await startRedisSentinel({ startTimeoutMs: 60_000 });
}, 90_000);
afterAll(async () => {
  await setup?.stop();
}, 30_000);

describe('sentinel: master failover', () => {
  it('the queue carries on after the sentinels promote the replica', { timeout: 50_000 }, async () => {
    const s = setup!;
    const connection = s.connectionOptions();
    expect(await s.currentMaster()).toEqual({ host: '127.0.0.1', port: s.master.port });
    const name = uniqueQueue('sentinel');
    const queue = new Queue<number>(name, { connection });
    internals(queue).client.on('error', () => {}); // a Queue reports nothing itself; ioredis would print each reconnect
    const runs = new Map<number, Array<{ start: number; end: number }>>();
    const completions: Array<{ claimedAt: number; at: number }> = [];
    const worker = new Worker<number>(
      name,
      async (job) => {
        const start = performance.now();
        await new Promise((r) => setTimeout(r, 5));
        runs.set(job.payload, [...(runs.get(job.payload) ?? []), { start, end: performance.now() }]);
      },
      { connection, concurrency: 10 },
    );
    worker.on('completed', (job) => completions.push({ claimedAt: job.claimedAt.getTime(), at: Date.now() }));
    worker.on('error', () => {}); // Redis errors while the master is down are expected here
    try {
      await worker.waitUntilReady();
      const n = 500;
      const added = await queue.addBulk(
        Array.from({ length: n }, (_, i) => ({
          payload: i,
          opts: { delay: 300 + Math.floor((i / n) * 5_000), durability: { replicas: 1, timeoutMs: 5_000 } },
        })),
      );
      expect(added.every((r) => r.replicated === 1)).toBe(true);
      await waitFor(() => runs.size >= n * 0.3, { timeoutMs: 20_000, what: '30% of the jobs' });

      const failover = await s.killMaster();
      expect(await s.currentMaster()).toEqual({ host: '127.0.0.1', port: s.replica.port });
      // After the failover the new master has no replica: a plain add goes through.
      await queue.add(n, { delay: 100 });
      await waitFor(() => runs.size === n + 1, { timeoutMs: 30_000, what: 'every job to run' });
      const resumedAt = Math.min(
        ...completions.filter((c) => c.claimedAt > failover.killedAt).map((c) => c.at),
      );
      console.log(
        `sentinel failover: promoted after ${Math.round(failover.promotedAfterMs)} ms, work resumed ${resumedAt - failover.killedAt} ms after the kill`,
      );
      await waitFor(async () => (await queue.counts().catch(() => null))?.active === 0, {
        what: 'no job active',
      });
      // Every job completed once: n + 1 completed records are kept (the default retention).
      expect(await queue.counts()).toEqual({
        scheduled: 0,
        due: 0,
        held: 0,
        active: 0,
        dead: 0,
        completed: n + 1,
        cancelled: 0,
        waitingChildren: 0,
      });
      for (const list of runs.values()) {
        list.sort((a, b) => a.start - b.start);
        for (let i = 1; i < list.length; i++) expect(list[i]!.start).toBeGreaterThanOrEqual(list[i - 1]!.end);
      }
    } finally {
      await worker.close({ timeoutMs: 5_000 });
      await queue.close();
    }
  });
});
