// A partitioned queue on a 3-master Redis Cluster (no replicas: not needed here, and lighter): its
// partitions' hash tags sit on every master and each partition's keys are written there, every
// job runs once and never early with workers claiming from all masters, and an idle worker is woken
// by a job added to any partition, wherever its subscription landed.
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { Queue, Worker, type Job } from '../../src/index.js';
import { partitionOf } from '../../src/partition/index.js';
import { partitionKeys } from '../../src/redis/keys.js';
import { uniqueQueue, waitFor } from '../support/fixtures.js';
import { useRedisCluster } from './support.js';

const redis = useRedisCluster({ replicasPerMaster: 0 });
const P = 6;

const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A fresh queue name whose P partitions cover every master (by their slots); and the master port of each. */
async function spreadQueue(prefix: string): Promise<{ name: string; masterOf: number[] }> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const name = uniqueQueue(prefix);
    const masterOf = await Promise.all(
      partitionKeys(name, P).map(async (keys) => (await redis.cluster().shardOf(keys.schedule)).master.port),
    );
    if (new Set(masterOf).size === 3) return { name, masterOf };
  }
  throw new Error('no queue name spread over all three masters in 50 tries');
}

function open<T>(name: string): Queue<T> {
  const q = new Queue<T>(name, { connection: redis.connection(), partitions: P });
  closers.push(() => q.close());
  return q;
}

function work<T>(name: string, handler: (job: Job<T>) => Promise<unknown>, options = {}): Worker<T> {
  const w = new Worker<T>(name, handler, { connection: redis.connection(), partitions: P, ...options });
  w.on('error', () => {});
  closers.push(() => w.close({ timeoutMs: 2_000 }));
  return w;
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
        const held = await node.zcard(keys.schedule);
        expect(held).toBe(added.filter((a) => partitionOf(a.id, P) === p).length);
        byMaster.set(masterOf[p]!, (byMaster.get(masterOf[p]!) ?? 0) + held);
      } finally {
        node.disconnect();
      }
    }
    expect(byMaster.size).toBe(3);
    for (const held of byMaster.values()) expect(held).toBeGreaterThan(0);
    expect(await q.counts()).toEqual({ scheduled: 120, due: 0, active: 0, dead: 0 });
  });

  it('every job runs once and never early, with workers claiming from all masters', async () => {
    const { name } = await spreadQueue('run');
    const q = open<number>(name);
    const runs = new Map<string, number>();
    let early = 0;
    const handler = async (job: Job<number>): Promise<void> => {
      runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
      if (job.claimedAt.getTime() < job.runAt.getTime()) early++;
    };
    const workers = [work(name, handler, { concurrency: 10 }), work(name, handler, { concurrency: 10 })];
    await Promise.all(workers.map((w) => w.waitUntilReady()));
    const added = await q.addBulk(
      Array.from({ length: 600 }, (_, i) => ({ payload: i, opts: { delay: (i * 11) % 800 } })),
    );
    await waitFor(() => runs.size === added.length, { timeoutMs: 20_000, what: 'every job to run' });
    await waitFor(async () => (await q.counts()).active === 0, { what: 'the last acks' });
    expect([...runs.values()].every((n) => n === 1)).toBe(true);
    expect(early).toBe(0);
    expect(await q.counts()).toEqual({ scheduled: 0, due: 0, active: 0, dead: 0 });
  });

  it('an idle worker is woken by a job added to any partition', async () => {
    const { name } = await spreadQueue('wake');
    const q = open<number>(name);
    const late: number[] = [];
    const w = work<number>(
      name,
      async (job) => void late.push(job.claimedAt.getTime() - job.runAt.getTime()),
      {
        maxSleepMs: '1h',
      },
    );
    await w.waitUntilReady();
    await q.add(-1, { delay: '1h' });
    await new Promise((r) => setTimeout(r, 100)); // let it go to sleep until the far job
    for (let p = 0; p < P; p++) {
      let id = `wake-${p}`;
      for (let i = 0; partitionOf(id, P) !== p; i++) id = `wake-${p}-${i}`;
      await q.add(p, { id, delay: 200 });
    }
    await waitFor(() => late.length === P, { timeoutMs: 5_000, what: 'the woken runs' });
    // With a 1 h timer, only the wake-ups explain starts this close to the due times.
    for (const ms of late) expect(ms).toBeLessThan(1_000);
  });
});
