/**
 * Failover figures: on a fresh 3+3 Redis Cluster per round (cluster-node-timeout 1 s), 4 workers
 * (concurrency 20, lease 5 s) run 2,000 delayed jobs; once 30% are done, the master owning the queue's slot is
 * SIGKILLed. Per round: time until the replica was promoted, until work resumed (first job claimed
 * after the kill completed) and until all jobs were done; jobs lost; jobs run twice; runs that
 * overlapped in time.
 * Run: npx tsx bench/cluster-failover.ts [rounds, default 3]
 */
import { startRedisCluster } from '../src/testing/redis-cluster.js';
import { runFailoverScenario } from '../test/cluster/failover-scenario.js';

const rounds = Number(process.argv[2] ?? 3);
const rows: string[] = [];
for (let round = 1; round <= rounds; round++) {
  const cluster = await startRedisCluster({ nodeTimeoutMs: 1_000 });
  try {
    const f = await runFailoverScenario(cluster, { queue: `failover-${round}` });
    const row =
      `round ${round}: promoted ${Math.round(f.failover.promotedAfterMs)} ms, work resumed ${f.resumedAfterMs} ms, ` +
      `all done ${Math.round(f.drainedAfterMs)} ms after the kill; lost ${f.lost.length}, ran twice ${f.ranTwice.length}, ` +
      `stranded by a lost claim reply ${f.strandedByLostReply.length}, overlapping ${f.overlaps.length}, foreign leases ${f.foreignLeases.length}, max lateness ${f.maxLatenessMs} ms, ` +
      `worker errors ${Object.values(f.errors).reduce((a, b) => a + b, 0)}`;
    console.log(row);
    if (Object.keys(f.errors).length > 0) console.log(`  worker errors: ${JSON.stringify(f.errors)}`);
    for (const id of f.ranTwice.slice(0, 5)) console.log(`  ran twice: ${id}`);
    rows.push(row);
  } finally {
    await cluster.stop();
  }
}
console.log(`\n${rows.length} rounds (2,000 jobs each, 4 workers x 20, cluster-node-timeout 1000 ms)`);
