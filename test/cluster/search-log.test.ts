// queue.search and job.log on a 3-master Redis Cluster (issue 33): a partitioned queue's search
// merges partitions living on different masters, in time order, page by page through its cursor;
// a grouped search reads its group's partition; job.log lines are written, shown, capped and
// deleted with their record in a partition's own slot.
import { describe, expect, it } from 'vitest';
import { LogLimitError, type JobInfo } from '../../src/index.js';
import { trim } from '../../src/operations/trim.js';
import { partitionKeys } from '../../src/redis/keys.js';
import { partitionOf } from '../../src/partition/index.js';
import { uniqueQueue, waitFor } from '../support/fixtures.js';
import { partitionedClients } from '../support/partitioned.js';
import { useRedisCluster } from './support.js';

const redis = useRedisCluster({ replicasPerMaster: 0 });
const P = 6;
const { queue: open, worker: work, closeAfter } = partitionedClients(redis.connection, P);

/** A fresh queue name whose P partitions cover every master. */
async function spreadQueue(prefix: string): Promise<string> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const name = uniqueQueue(prefix);
    const masters = await Promise.all(
      partitionKeys(name, P).map(async (keys) => (await redis.cluster().shardOf(keys.waiting)).master.port),
    );
    if (new Set(masters).size === 3) return name;
  }
  throw new Error('no queue name spread over all three masters in 50 tries');
}

describe('cluster: queue.search', () => {
  it('merges the partitions of every master in time order, page by page', async () => {
    const name = await spreadQueue('search');
    const queue = open<number>(name);
    const at = Date.now() + 3_600_000;
    await queue.addBulk(
      Array.from({ length: 90 }, (_, i) => ({
        payload: i,
        opts: { id: `c${i}`, runAt: at + (i % 30) * 1000 },
      })),
    );
    await queue.addBulk(
      Array.from({ length: 12 }, (_, i) => ({
        payload: i,
        opts: { id: `g${i}`, group: 'tenant', delay: `${i + 1}m` },
      })),
    );
    expect(new Set(Array.from({ length: 90 }, (_, i) => partitionOf(`c${i}`, P))).size).toBeGreaterThan(3);
    const expected = Array.from({ length: 90 }, (_, i) => ({ id: `c${i}`, due: at + (i % 30) * 1000 }))
      .sort((a, b) => a.due - b.due || Buffer.compare(Buffer.from(a.id), Buffer.from(b.id)))
      .map((j) => j.id);
    const seen: Array<JobInfo<number>> = [];
    let cursor: string | null = null;
    do {
      const page: { jobs: Array<JobInfo<number>>; cursor: string | null } = await queue.search({
        idPrefix: 'c',
        limit: 7,
        cursor,
      });
      seen.push(...page.jobs);
      cursor = page.cursor;
    } while (cursor !== null);
    expect(seen.map((j) => j.id)).toEqual(expected);
    const window = await queue.search({ state: 'scheduled', from: at + 10_000, to: at + 11_000, limit: 100 });
    expect(window.jobs.map((j) => j.id)).toEqual(expected.slice(30, 36));
    const grouped = await queue.search({ group: 'tenant', limit: 5 });
    expect(grouped.jobs.map((j) => j.id)).toEqual(['g0', 'g1', 'g2', 'g3', 'g4']);
    const rest = await queue.search({ group: 'tenant', limit: 100, cursor: grouped.cursor });
    expect(rest.jobs.map((j) => j.id)).toEqual(['g5', 'g6', 'g7', 'g8', 'g9', 'g10', 'g11']);
    expect(rest.cursor).toBeNull();
  });
});

describe('cluster: job.log', () => {
  it('writes, shows, caps and deletes a job’s lines in its partition’s slot', async () => {
    const name = await spreadQueue('log');
    const queue = open<number>(name);
    const refused: unknown[] = [];
    work<number>(
      name,
      async (job) => {
        for (let i = 1; i <= 20; i++) await job.log(`step ${i} of job ${job.id}`);
        await job.log('one too many').catch((err: unknown) => refused.push(err));
        return 'ok';
      },
      { keepCompleted: { count: 100, age: '1h' } },
    );
    const added = await queue.addBulk(
      Array.from({ length: 6 }, (_, i) => ({ payload: i, opts: { id: `l${i}` } })),
    );
    for (const { id } of added) {
      const done = await waitFor(async () => {
        const info = await queue.get(id);
        return info?.state === 'completed' ? info : null;
      });
      expect(done.logs?.map((l) => l.line)).toEqual(
        Array.from({ length: 20 }, (_, i) => `step ${i + 1} of job ${id}`),
      );
      expect(done.logs?.every((l) => l.attempt === 1)).toBe(true);
    }
    expect(refused).toHaveLength(6);
    expect(refused.every((err) => err instanceof LogLimitError)).toBe(true);
    const client = redis.client();
    closeAfter(() => client.quit());
    const none = { count: 0, ageMs: 0 };
    for (const keys of partitionKeys(name, P)) {
      await trim(client, keys, { completed: { count: 0, ageMs: 1 }, cancelled: none, dead: none });
      expect(await client.exists(keys.logs)).toBe(0);
    }
  });
});
