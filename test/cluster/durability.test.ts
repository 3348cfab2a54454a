// Replicated durability on a Redis Cluster: `durability: { replicas }` runs WAIT on the connection
// (and so the node) that ran the add, reports how many replicas hold the job, and throws
// DurabilityError when too few do. Without it, an acknowledged add can be lost in a failover: shown
// by cutting a master's replication and failing over to its replica.
import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { DurabilityError, Queue, ValidationError } from '../../src/index.js';
import { queueKeys } from '../../src/redis/keys.js';
import { uniqueQueue, waitFor } from '../support/fixtures.js';
import { useRedisCluster } from './support.js';
import { internals } from '../support/internals.js';

const redis = useRedisCluster({ nodeTimeoutMs: 1_000 });

describe('cluster: replicated durability', () => {
  it('refuses a durability option it cannot honour, writing nothing', async () => {
    const queue = new Queue<string>(uniqueQueue('invalid'), { connection: redis.connection() });
    try {
      const bad: unknown[] = [
        null,
        {},
        { replicas: 0 },
        { replicas: 1.5 },
        { replicas: 1, timeoutMs: 0 },
        { replicas: 1, timeoutMs: '1s' },
        { replicas: 1, wait: true },
      ];
      for (const durability of bad) {
        await expect(
          queue.add('x', { durability } as unknown as Parameters<typeof queue.add>[1]),
        ).rejects.toBeInstanceOf(ValidationError);
      }
      await expect(queue.add('x', { durability: { replicas: 0 } })).rejects.toThrow(
        /durability.replicas must be a whole number >= 1, got number 0/,
      );
      expect(await queue.counts()).toMatchObject({ scheduled: 0 });
    } finally {
      await queue.close();
    }
  });

  it('says how many replicas hold an add, and throws when fewer than asked do in time', async () => {
    const queue = new Queue<string>(uniqueQueue('durable'), { connection: redis.connection() });
    try {
      const plain = await queue.add('plain');
      expect(plain).not.toHaveProperty('replicated');
      const one = await queue.add('one', { durability: { replicas: 1, timeoutMs: 5_000 } });
      expect(one).toMatchObject({ created: true, replicated: 1 });

      // Each master has one replica: asking for two can only time out, and must say so.
      const t0 = performance.now();
      const err: unknown = await queue
        .add('two', { id: 'two', durability: { replicas: 2, timeoutMs: 300 } })
        .catch((e: unknown) => e);
      expect(performance.now() - t0).toBeGreaterThanOrEqual(280);
      expect(err).toBeInstanceOf(DurabilityError);
      expect(err).toMatchObject({ code: 'DELAYQ_DURABILITY', requested: 2, replicated: 1, timeoutMs: 300 });
      expect((err as DurabilityError).results).toEqual([
        { id: 'two', runAt: expect.any(Date) as Date, created: true, replicated: 1 },
      ]);
      expect((err as Error).message).toMatch(/1 of the 2 replicas asked for acknowledged within 300 ms/);
      // Written on the master all the same: adding it again is a no-op that finds it.
      expect(await queue.add('two', { id: 'two' })).toMatchObject({ id: 'two', created: false });

      // Several batches, each waited for on its own connection's writes.
      const bulk = await queue.addBulk(
        Array.from({ length: 1_200 }, (_, i) => ({
          payload: `b${i}`,
          opts: i % 2 === 0 ? { durability: { replicas: 1, timeoutMs: 5_000 } } : {},
        })),
      );
      expect(bulk.filter((r) => r.replicated === 1)).toHaveLength(600);
      expect(bulk.filter((r) => r.replicated === undefined)).toHaveLength(600);
    } finally {
      await queue.close();
    }
  });

  it(
    'an acknowledged add is lost when the master fails over to a replica that lacks it; a durable add says so up front',
    { timeout: 50_000 },
    async () => {
      const name = uniqueQueue('loss');
      const queue = new Queue<string>(name, { connection: redis.connection() });
      internals(queue).client.on('error', () => {}); // a Queue reports nothing itself; ioredis would print each reconnect
      try {
        const kept = await queue.add('kept', { id: 'kept', durability: { replicas: 1, timeoutMs: 5_000 } });
        expect(kept.replicated).toBe(1);

        const cluster = redis.cluster();
        const { master } = await cluster.shardOf(queueKeys(name).waiting);
        await cluster.cutReplication(master);
        // Acknowledged by the master, which now holds it alone.
        expect(await queue.add('plain', { id: 'plain' })).toMatchObject({ created: true });
        const err: unknown = await queue
          .add('durable', { id: 'durable', durability: { replicas: 1, timeoutMs: 300 } })
          .catch((e: unknown) => e);
        expect(err).toBeInstanceOf(DurabilityError);
        expect(err).toMatchObject({ requested: 1, replicated: 0 });
        expect((await queue.get('plain'))?.state).toBe('scheduled');

        // WAIT goes to the master that ran the add, not to any node: a queue on another master
        // still gets its replica, the cut one never does (a misrouted WAIT would count one).
        let otherName = uniqueQueue('other');
        while ((await cluster.shardOf(queueKeys(otherName).waiting)).master.id === master.id) {
          otherName = uniqueQueue('other');
        }
        const other = new Queue<string>(otherName, { connection: redis.connection() });
        try {
          for (let i = 0; i < 5; i++) {
            const durability = { replicas: 1, timeoutMs: 200 };
            expect((await other.add('elsewhere', { durability })).replicated).toBe(1);
            await expect(queue.add('cut', { durability })).rejects.toMatchObject({ replicated: 0 });
          }
        } finally {
          await other.close();
        }

        await cluster.killMaster(master);
        await waitFor(async () => (await queue.get('kept').catch(() => null)) !== null, {
          timeoutMs: 20_000,
          what: 'the queue to answer from the promoted replica',
        });
        expect(await queue.get('plain')).toBeNull(); // acknowledged, and gone
        expect(await queue.get('durable')).toBeNull(); // gone too, but the caller was told
        expect(await queue.counts()).toMatchObject({ scheduled: 1 }); // 'kept' alone
      } finally {
        await queue.close();
      }
    },
  );
});
