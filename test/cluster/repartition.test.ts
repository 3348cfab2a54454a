// A live re-partition on a 3-master Redis Cluster (no replicas): 2 -> 6 partitions under load, the
// new partitions' slots on other masters (test/support/repartition-scenario.ts). Each job runs once,
// none early or lost; workers and producers of the old count follow; the jobs of the new
// partitions are written on the masters that own their slots.
import { describe, expect, it } from 'vitest';
import { partitionKeys } from '../../src/redis/keys.js';
import { uniqueQueue } from '../support/fixtures.js';
import { describeOutcome, runRepartitionScenario } from '../support/repartition-scenario.js';
import { useRedisCluster } from './support.js';

const redis = useRedisCluster({ replicasPerMaster: 0 });

describe('cluster: repartition', () => {
  it('grows 2 -> 6 under load across the masters: each job once, none early or lost', async () => {
    // A name whose 6 partitions cover every master, so the change reaches masters the queue did not use.
    let name = '';
    for (let attempt = 0; attempt < 50 && !name; attempt++) {
      const candidate = uniqueQueue('crp');
      const masters = await Promise.all(
        partitionKeys(candidate, 6).map(async (k) => (await redis.cluster().shardOf(k.waiting)).master.port),
      );
      if (new Set(masters).size === 3) name = candidate;
    }
    expect(name).not.toBe('');
    const c = redis.client();
    try {
      const o = await runRepartitionScenario(redis.connection, c, name, 2, 6);
      console.log(describeOutcome('3-master cluster', 2, 6, o));
      expect(o.recorded).toEqual(['6', '2']);
      expect(o.lost).toEqual([]);
      expect(o.twice).toEqual([]);
      expect(o.early).toBe(0);
      expect(o.moved).toBe(0);
      expect(o.errors).toEqual([]);
      expect(o.duplicated).toBe(0);
      expect(o.left).toBe(0);
      expect(o.completed).toBe(o.jobs);
      expect(o.completedPer.slice(2).every((n) => n > 0)).toBe(true);
      expect(o.workersPer).toEqual([2, 2, 2, 2, 2, 2]);
    } finally {
      await c.quit();
    }
  });
});
