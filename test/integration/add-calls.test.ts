/**
 * addBulk cuts its jobs into add script calls bounded by jobs and by bytes (src/queue/add-calls.ts):
 * while a call runs, no worker's claim can. Counted by the script calls Redis ran (INFO
 * commandstats), with every job written once and the results in the jobs' order.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue } from '../../src/index.js';
import { ADD_CALL_BOUNDS } from '../../src/queue/add-calls.js';
import { queueKeys } from '../../src/redis/keys.js';
import { inspector, uniqueQueue, useRedis } from '../support/fixtures.js';

const redis = useRedis();
let raw: Redis;
beforeAll(() => {
  raw = inspector(redis.url());
});
afterAll(async () => {
  await raw.quit();
});

/** Script calls Redis has run so far (FCALL, or EVALSHA where functions are off). */
async function scriptCalls(): Promise<number> {
  const stats = await raw.info('commandstats');
  let calls = 0;
  for (const m of stats.matchAll(/^cmdstat_(?:fcall|evalsha|eval):calls=(\d+)/gm)) calls += Number(m[1]);
  return calls;
}

async function addCounted<T>(queue: Queue<T>, payloads: T[]): Promise<{ calls: number; ids: string[] }> {
  const before = await scriptCalls();
  const results = await queue.addBulk(payloads.map((payload) => ({ payload })));
  expect(results.every((r) => r.created)).toBe(true);
  return { calls: (await scriptCalls()) - before, ids: results.map((r) => r.id) };
}

describe('addBulk: one script call per at most ADD_CALL_BOUNDS jobs and bytes', () => {
  it('small jobs: cut by the job bound', async () => {
    const name = uniqueQueue('add-calls');
    const queue = new Queue<number>(name, { connection: redis.url() });
    await queue.add(-1);
    const n = 2 * ADD_CALL_BOUNDS.jobs + 7;
    const { calls, ids } = await addCounted(
      queue,
      Array.from({ length: n }, (_, i) => i),
    );
    expect(calls).toBe(3);
    expect(await raw.zcard(queueKeys(name).waiting)).toBe(n + 1);
    // Results in the jobs' order: job i's record holds payload i.
    const got = await queue.get(ids[n - 1]!);
    expect(got?.payload).toBe(n - 1);
    await queue.close();
  });

  it('large jobs: cut by the byte bound, two to a call when three would not fit', async () => {
    const name = uniqueQueue('add-calls-big');
    const pad = 'x'.repeat(Math.floor(ADD_CALL_BOUNDS.bytes / 2.5));
    const queue = new Queue<{ i: number; pad: string }>(name, {
      connection: redis.url(),
      maxPayloadBytes: 2 * ADD_CALL_BOUNDS.bytes,
    });
    await queue.add({ i: -1, pad: '' });
    const { calls, ids } = await addCounted(
      queue,
      Array.from({ length: 7 }, (_, i) => ({ i, pad })),
    );
    expect(calls).toBe(4);
    expect(await raw.zcard(queueKeys(name).waiting)).toBe(8);
    for (const [i, id] of ids.entries()) expect((await queue.get(id))?.payload?.i).toBe(i);
    await queue.close();
  });
});
