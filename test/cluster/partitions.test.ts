// A partitioned queue on a 3-master Redis Cluster (no replicas: not needed here, and lighter): its
// partitions' hash tags sit on every master and each partition's keys are written there, every
// job runs once and never early with workers claiming from all masters, and an idle worker is woken
// by a job added to any partition, wherever its subscription landed.
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { partitionOf, placementOf } from '../../src/partition/index.js';
import { partitionKeys } from '../../src/redis/keys.js';
import { uniqueQueue, waitFor } from '../support/fixtures.js';
import type { Job } from '../../src/index.js';
import {
  expectEachRunsOnce,
  expectWakeFromEveryPartition,
  partitionedClients,
} from '../support/partitioned.js';
import { useRedisCluster } from './support.js';

const redis = useRedisCluster({ replicasPerMaster: 0 });
const P = 6;

const { queue: open, worker: work } = partitionedClients(redis.connection, P);

/** A fresh queue name whose P partitions cover every master (by their slots); and the master port of each. */
async function spreadQueue(prefix: string): Promise<{ name: string; masterOf: number[] }> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const name = uniqueQueue(prefix);
    const masterOf = await Promise.all(
      partitionKeys(name, P).map(async (keys) => (await redis.cluster().shardOf(keys.waiting)).master.port),
    );
    if (new Set(masterOf).size === 3) return { name, masterOf };
  }
  throw new Error('no queue name spread over all three masters in 50 tries');
}

describe('cluster: partitions', () => {
  it('spreads the partitions over the masters and writes each partition on its own', async () => {
    const { name, masterOf } = await spreadQueue('spread');
    const q = open<number>(name);
    const added = await q.addBulk(
      Array.from({ length: 120 }, (_, i) => ({ payload: i, opts: { delay: '1h' } })),
    );
    // Ask each master directly (no redirection): it holds exactly the partitions its slots own.
    const byMaster = new Map<number, number>();
    for (const [p, keys] of partitionKeys(name, P).entries()) {
      const node = new Redis(masterOf[p]!, '127.0.0.1');
      try {
        const held = await node.zcard(keys.waiting);
        expect(held).toBe(added.filter((a) => partitionOf(a.id, P) === p).length);
        byMaster.set(masterOf[p]!, (byMaster.get(masterOf[p]!) ?? 0) + held);
      } finally {
        node.disconnect();
      }
    }
    expect(byMaster.size).toBe(3);
    for (const held of byMaster.values()) expect(held).toBeGreaterThan(0);
    expect(await q.counts()).toEqual({
      scheduled: 120,
      due: 0,
      held: 0,
      active: 0,
      dead: 0,
      completed: 0,
      cancelled: 0,
      waitingChildren: 0,
    });
  });

  it('every job runs once and never early, with workers claiming from all masters', async () => {
    const { name } = await spreadQueue('run');
    await expectEachRunsOnce(
      open<number>(name),
      (handler) => [work(name, handler, { concurrency: 10 }), work(name, handler, { concurrency: 10 })],
      Array.from({ length: 600 }, (_, i) => ({ payload: i, opts: { delay: (i * 11) % 800 } })),
      20_000,
    );
  });

  it('an idle worker is woken by a job added to any partition, wherever its subscription is', async () => {
    const { name } = await spreadQueue('wake');
    await expectWakeFromEveryPartition(
      open<number>(name),
      (handler, options) => work(name, handler, options),
      P,
      1_000,
      redis.client,
    );
  });

  it('groups: each group lives in its partition (fnv1a32(group) mod P), bounded across workers; get and cancel by id find it', async () => {
    const { name, masterOf } = await spreadQueue('groups');
    const q = open<number>(name);
    const groups = Array.from({ length: 12 }, (_, i) => `tenant-${i}`);
    const added = await q.addBulk(
      Array.from({ length: 240 }, (_, i) => ({
        payload: i,
        opts: { group: groups[i % groups.length]!, delay: '1h' },
      })),
    );
    // Each group's jobs are in gq of its group's partition, asked of that master directly.
    for (const [p, keys] of partitionKeys(name, P).entries()) {
      const node = new Redis(masterOf[p]!, '127.0.0.1');
      try {
        const here = groups.filter((g) => placementOf('', g, P) === p);
        expect(await node.zcard(keys.groupJobs)).toBe(here.length * 20);
      } finally {
        node.disconnect();
      }
    }
    // By id alone: the id's partition is asked first, then the others.
    const moved = added.find(
      (a, i) => placementOf(a.id, groups[i % groups.length], P) !== partitionOf(a.id, P),
    )!;
    expect((await q.get(moved.id))?.state).toBe('scheduled');
    expect(await q.cancel(moved.id)).toBe(true);
    expect((await q.get(moved.id))?.state).toBe('cancelled');
    const rest = added.filter((a) => a.id !== moved.id).map((a) => a.id);
    for (const id of rest) expect(await q.reschedule(id, { delay: 0 })).toBe(true);

    const running = new Map<string, number>();
    let over = 0;
    const ran = new Set<string>();
    const handler = async (job: Job<number>): Promise<void> => {
      const g = job.group!;
      running.set(g, (running.get(g) ?? 0) + 1);
      if (running.get(g)! > 1) over++;
      await new Promise((r) => setTimeout(r, 2));
      running.set(g, running.get(g)! - 1);
      ran.add(job.id);
    };
    work(name, handler, { concurrency: 10, groups: { concurrency: 1 } });
    work(name, handler, { concurrency: 10, groups: { concurrency: 1 } });
    await waitFor(() => ran.size === rest.length, { timeoutMs: 30_000, what: `${rest.length} runs` });
    expect(over).toBe(0);
  });
});
