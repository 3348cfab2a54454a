// The conformance suite, unchanged, against a 3-master Redis Cluster (3 replicas): every script
// call is routed by its KEYS, which share the queue's hash tag. Then wake-ups: a PUBLISH made by a
// script on the queue's master reaches a subscriber on any node.
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { Queue, Worker } from '../../src/index.js';
import { queueKeys } from '../../src/redis/keys.js';
import { WakeSubscriber } from '../../src/redis/wake-subscriber.js';
import { conformanceSuite } from '../conformance/suite.js';
import { uniqueQueue, waitFor } from '../support/fixtures.js';
import { useRedisCluster } from './support.js';

const redis = useRedisCluster();

conformanceSuite('zpopmin', {}, { label: 'cluster', connection: redis.connection, inspector: redis.client });
conformanceSuite('range', {}, { label: 'cluster', connection: redis.connection, inspector: redis.client });
conformanceSuite(
  'wheel',
  {},
  { label: 'cluster', connection: redis.connection, inspector: redis.client },
  { precisionMs: 1_000, granularityMs: 1_000 },
);

describe('cluster: wake-ups', () => {
  it('a wake-up published by the add script reaches a subscriber on every node, master or replica', async () => {
    const name = uniqueQueue('wake');
    const received = new Map<number, number[]>();
    const errors: Error[] = [];
    const subscribers = redis.cluster().nodes.map((node) => {
      const source = new Redis(node.url);
      received.set(node.port, []);
      const subscriber = new WakeSubscriber(
        source,
        queueKeys(name).wake,
        (due) => received.get(node.port)?.push(due ?? -1),
        (err) => errors.push(err),
      );
      return { source, subscriber };
    });
    const queue = new Queue<string>(name, { connection: redis.connection() });
    try {
      await Promise.all(subscribers.map((s) => s.subscriber.start()));
      const { runAt } = await queue.add('x', { delay: '1h' });
      await waitFor(() => [...received.values()].every((list) => list.length === 1), {
        timeoutMs: 5_000,
        what: 'the wake-up on all six nodes',
      });
      for (const list of received.values()) expect(list).toEqual([runAt.getTime()]);
      expect(errors).toEqual([]);
    } finally {
      await queue.close();
      await Promise.all(subscribers.map((s) => s.subscriber.stop()));
      await Promise.all(subscribers.map((s) => s.source.quit()));
    }
  });

  it('idle workers are woken by an earlier job wherever their subscriptions landed', async () => {
    // Each worker's Cluster subscribes on a node of its own choosing (at random).
    const queues = Array.from({ length: 4 }, () => uniqueQueue('idle'));
    const ran: Array<{ runAt: number; claimedAt: number }> = [];
    const workers = queues.map(
      (name) =>
        new Worker<string>(
          name,
          async (job) => void ran.push({ runAt: job.runAt.getTime(), claimedAt: job.claimedAt.getTime() }),
          { connection: redis.connection(), maxSleepMs: 3_600_000 },
        ),
    );
    const producers = queues.map((name) => new Queue<string>(name, { connection: redis.connection() }));
    try {
      await Promise.all(producers.map((q) => q.add('far', { delay: '1h' })));
      await Promise.all(workers.map((w) => w.waitUntilReady()));
      await new Promise((r) => setTimeout(r, 100)); // let them go to sleep until the far jobs
      await Promise.all(producers.map((q) => q.add('soon', { delay: 200 })));
      await waitFor(() => ran.length === queues.length, { timeoutMs: 5_000, what: 'the woken runs' });
      // With a 1 h timer, only the wake-up explains a start this close to the due time.
      for (const run of ran) expect(run.claimedAt - run.runAt).toBeLessThan(1_000);
    } finally {
      await Promise.all(workers.map((w) => w.close()));
      await Promise.all(producers.map((q) => q.close()));
    }
  });
});
