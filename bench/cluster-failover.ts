/**
 * Failover figures: on a fresh 3+3 Redis Cluster per round (cluster-node-timeout 1 s), 4 workers
 * (concurrency 20, lease 5 s) run 2,000 delayed jobs; once 30% are done, the master owning the queue's slot is
 * SIGKILLed. Per round: time until the replica was promoted, until work resumed (first job claimed
 * after the kill completed) and until all jobs were done; jobs lost; jobs run twice; runs that
 * overlapped in time.
 * Run: npx tsx bench/cluster-failover.ts [rounds, default 3]
 */
import { runFailoverRounds } from '../test/cluster/failover-scenario.js';

const rounds = Number(process.argv[2] ?? 3);
const result = await runFailoverRounds(rounds, (line) => console.log(line));
console.log(
  `\n${result.rounds.length} rounds (2,000 jobs each, 4 workers x 20, cluster-node-timeout 1000 ms)`,
);
for (const v of result.violations) console.log(`VIOLATION ${v}`);
