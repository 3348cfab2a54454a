// The delayq function library on a Redis Cluster: every primary keeps its own functions, so the
// first call that finds it missing loads it on every primary, and a primary that lost it (FUNCTION
// FLUSH, a restart without persistence) gets it again from the next call it serves.
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { Queue } from '../../src/index.js';
import { queueKeys } from '../../src/redis/keys.js';
import { functionLibrary } from '../../src/redis/scripts.js';
import { uniqueQueue } from '../support/fixtures.js';
import { useRedisCluster } from './support.js';

const redis = useRedisCluster({ replicasPerMaster: 0 });

async function librariesOn(port: number): Promise<string[]> {
  const node = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 1 });
  try {
    const list = (await node.call('FUNCTION', 'LIST')) as unknown[][];
    return list.map((lib) => String(lib[1]));
  } finally {
    await node.quit();
  }
}

describe('cluster: the function library', () => {
  it('is loaded on every primary by the first call, and again on one that lost it', async () => {
    const name = uniqueQueue('fn');
    const masters = (await redis.cluster().shards()).map((s) => s.master.port);
    expect(masters).toHaveLength(3);
    const queue = new Queue<number>(name, { connection: redis.connection() });
    try {
      await queue.add(1, { delay: '1h' });
      for (const port of masters) expect(await librariesOn(port)).toEqual([functionLibrary().name]);

      const own = (await redis.cluster().shardOf(queueKeys(name).waiting)).master.port;
      const node = new Redis(own, '127.0.0.1', { maxRetriesPerRequest: 1 });
      await node.call('FUNCTION', 'FLUSH');
      await node.quit();
      expect(await librariesOn(own)).toEqual([]);
      expect((await queue.add(2, { delay: '1h' })).created).toBe(true);
      expect(await librariesOn(own)).toEqual([functionLibrary().name]);
      expect(await queue.counts()).toMatchObject({ scheduled: 2 });
    } finally {
      await queue.close();
    }
  });
});
