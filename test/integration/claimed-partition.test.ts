// A worker sends a job's fate (ack, fail, extend, progress) to the partition it claimed the job
// from, not to the one the job's id hashes to under the current count: after a re-partition a job
// stays where it was (docs/CLUSTER.md, "Re-partitioning a live queue"), and a fate sent elsewhere
// is refused there, so the lease would lapse and the job run a second time. The jobs here are moved
// by hand into the partition their id does not hash to, as a count change leaves them.
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { partitionOf } from '../../src/partition/index.js';
import { partitionKeys } from '../../src/redis/keys.js';
import { inspector, serverNow, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';
import { idIn, partitionedClients } from '../support/partitioned.js';

const redis = useRedis();
const P = 2;
const { queue, worker, closeAfter } = partitionedClients(redis.url, P);

/** Move waiting job `id` from its id's partition to the other one, due at `due` (server ms). */
async function moveToOther(c: Redis, name: string, id: string, due: number): Promise<number> {
  const home = partitionOf(id, P);
  const other = 1 - home;
  const [from, to] = [partitionKeys(name, P)[home]!, partitionKeys(name, P)[other]!];
  const record = await c.hgetBuffer(from.records, id);
  expect(record).not.toBeNull();
  await c.multi().zrem(from.waiting, id).hdel(from.records, id).exec();
  await c.multi().hset(to.records, id, record!).zadd(to.waiting, due, id).exec();
  return other;
}

describe('a job claimed from a partition its id does not hash to', () => {
  it('is acked, failed, extended and reported there: each attempt runs once, nothing is left leased', async () => {
    const name = uniqueQueue('claimed');
    const q = queue<string>(name);
    const c = inspector(redis.url());
    closeAfter(() => c.quit());
    const okId = idIn(0, P, 'ok-');
    const retryId = idIn(1, P, 'retry-');
    await q.add('ok', { id: okId, delay: '1h' });
    await q.add('retry', { id: retryId, delay: '1h', attempts: 2, backoff: { type: 'fixed', delay: 50 } });
    const now = await serverNow(c);
    const okAt = await moveToOther(c, name, okId, now + 300);
    const retryAt = await moveToOther(c, name, retryId, now + 300);
    const runs: string[] = [];
    const errors: Error[] = [];
    const w = worker<string>(
      name,
      async (job) => {
        runs.push(`${job.id}#${job.attempt}`);
        await job.extendLease(5_000);
        await job.progress({ at: job.attempt });
        if (job.id === retryId && job.attempt === 1) throw new Error('first attempt fails');
        return 'done';
      },
      { leaseMs: 1_000, keepCompleted: { count: 10 } },
    );
    w.on('error', (err) => errors.push(err));
    await waitFor(
      async () => (await q.get(okId))?.state === 'completed' && (await q.get(retryId))?.state === 'completed',
      {
        timeoutMs: 10_000,
        what: 'both jobs completed',
      },
    );
    // Past one lease: a fate sent to the wrong partition would leave a lease to lapse and a rerun.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(runs.sort()).toEqual([`${okId}#1`, `${retryId}#1`, `${retryId}#2`].sort());
    expect(errors).toEqual([]);
    const keys = partitionKeys(name, P);
    for (const p of [okAt, retryAt]) expect(await c.zcard(keys[p]!.leases)).toBe(0);
    // The completed records stay where the jobs ran; the id's own partition never saw them.
    expect(await c.zscore(keys[okAt]!.completed, okId)).not.toBeNull();
    expect(await c.zscore(keys[1 - okAt]!.completed, okId)).toBeNull();
    expect(await c.zscore(keys[retryAt]!.completed, retryId)).not.toBeNull();
  });
});
