// Killing the master that owns a queue's slot while workers run 2,000 delayed jobs: its replica
// takes over, the workers carry on, and afterwards no job is lost and none ran in two places at once.
// An idle worker on another queue of that master is still woken by a new job afterwards.
import { describe, expect, it } from 'vitest';
import { Queue, Worker } from '../../src/index.js';
import { queueKeys } from '../../src/redis/keys.js';
import { uniqueQueue, waitFor } from '../support/fixtures.js';
import { runFailoverScenario } from './failover-scenario.js';
import { useRedisCluster } from './support.js';

// A short node timeout keeps the failover (and the test) quick; a healthy node here never stalls
// for a second.
const redis = useRedisCluster({ nodeTimeoutMs: 1_000 });

describe('cluster: master failover', () => {
  it(
    'the replica takes over mid-run; no job lost, none run in two places at once',
    { timeout: 50_000 },
    async () => {
      const cluster = redis.cluster();
      const name = uniqueQueue('failover');
      const { master } = await cluster.shardOf(queueKeys(name).waiting);
      // A second queue on the same master, with a worker asleep on a 1 h timer.
      let idleName = uniqueQueue('idle');
      while ((await cluster.shardOf(queueKeys(idleName).waiting)).master.id !== master.id)
        idleName = uniqueQueue('idle');
      const woken: Array<{ runAt: number; claimedAt: number }> = [];
      const idle = new Worker<string>(
        idleName,
        async (job) => void woken.push({ runAt: job.runAt.getTime(), claimedAt: job.claimedAt.getTime() }),
        { connection: redis.connection(), maxSleepMs: 3_600_000 },
      );
      idle.on('error', () => {}); // Redis errors while the master is down are expected here
      const idleQueue = new Queue<string>(idleName, { connection: redis.connection() });
      try {
        await idle.waitUntilReady();
        const figures = await runFailoverScenario(cluster, { queue: name });
        console.log(
          `cluster failover: promoted after ${Math.round(figures.failover.promotedAfterMs)} ms; ` +
            `work resumed ${figures.resumedAfterMs} ms after the kill, all ${figures.jobs} done ${Math.round(figures.drainedAfterMs)} ms after it; ` +
            `lost ${figures.lost.length}, ran twice ${figures.ranTwice.length}, stranded by a lost claim reply ${figures.strandedByLostReply.length}, ` +
            `overlapping runs ${figures.overlaps.length}, foreign leases ${figures.foreignLeases.length}; worker errors ${JSON.stringify(figures.errors)}`,
        );
        expect(figures.failover.promoted.id).not.toBe(master.id);
        expect(figures.lost).toEqual([]);
        expect(figures.overlaps).toEqual([]);
        expect(figures.foreignLeases).toEqual([]);
        // Every job kept as completed, once: a completion the failover lost was run and kept again.
        expect(figures.counts).toEqual({
          scheduled: 0,
          due: 0,
          held: 0,
          active: 0,
          dead: 0,
          completed: figures.jobs,
          cancelled: 0,
          waitingChildren: 0,
        });
        expect(figures.resumedAfterMs).toBeLessThan(20_000);

        await idleQueue.add('after the failover', { delay: 200 });
        await waitFor(() => woken.length === 1, { timeoutMs: 5_000, what: 'the idle worker to be woken' });
        expect(woken[0]!.claimedAt - woken[0]!.runAt).toBeLessThan(1_000);
      } finally {
        await idle.close();
        await idleQueue.close();
      }
    },
  );
});
