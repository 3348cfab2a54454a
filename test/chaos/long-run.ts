/**
 * The long chaos run (`npm run test:chaos`): by default 20,000 jobs and 60 faults of every kind,
 * with appendonly yes + appendfsync always. Prints the checker's counts and exits 1 on any
 * violation. Options: --jobs N --faults N --workers N --concurrency N --lease MS --inject MS
 * --seed N --kinds kill,stop,... --no-persistence (the control: with --kinds redis-restart the checker
 * must then report lost jobs), --group-share F (default 0.2: that share of jobs is added with one of
 * 8 groups, workers at groups.concurrency 2; every group's running count must be 0 afterwards),
 * --flow-share F (default 0.05: that share of jobs also adds a flow of a parent and 3 children;
 * every parent must complete once, after its children: test/chaos/flows.ts).
 *
 * Then the cluster fault: --cluster-rounds N (default 3; 0 skips it) rounds of the master-failover
 * scenario (test/cluster/failover-scenario.ts), each on a fresh 3+3 Redis Cluster whose master of
 * the queue's slot is SIGKILLed mid-run; every run is recorded outside Redis and checked for lost
 * jobs, runs in two places at once and runs under another worker's lease.
 */
import { parseArgs } from 'node:util';
import type { FaultKind } from './checker.js';
import { formatCounts } from './checker.js';
import { runFailoverRounds } from '../cluster/failover-scenario.js';
import { runChaos } from './run.js';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '20000' },
    faults: { type: 'string', default: '60' },
    workers: { type: 'string', default: '4' },
    concurrency: { type: 'string', default: '16' },
    lease: { type: 'string', default: '2000' },
    inject: { type: 'string', default: '120000' },
    spread: { type: 'string', default: '10000' },
    seed: { type: 'string', default: String(Date.now() % 1_000_000) },
    kinds: { type: 'string', default: 'kill,stop,term,client-kill,stall,reset,redis-restart' },
    'no-persistence': { type: 'boolean', default: false },
    'cluster-rounds': { type: 'string', default: '3' },
    'group-share': { type: 'string', default: '0.2' },
    'flow-share': { type: 'string', default: '0.05' },
  },
});

const kinds = values.kinds.split(',') as FaultKind[];
const persistence = !values['no-persistence'];
const options = {
  jobs: Number(values.jobs),
  faults: Number(values.faults),
  kinds,
  workers: Number(values.workers),
  concurrency: Number(values.concurrency),
  leaseMs: Number(values.lease),
  injectMs: Number(values.inject),
  dueSpreadMs: Number(values.spread),
  persistence,
  failAlwaysShare: 0.01,
  failOnceShare: 0.03,
  attempts: 25,
  drainTimeoutMs: 180_000,
  seed: Number(values.seed),
  groupShare: Number(values['group-share']),
  flowShare: Number(values['flow-share']),
  log: (line: string) => console.log(`[chaos +${Math.round((Date.now() - t0) / 1000)}s] ${line}`),
};
const t0 = Date.now();
console.log(
  `chaos: ${options.jobs} jobs (${Math.round(options.groupShare * 100)} % grouped), ${options.faults} faults over ${options.injectMs} ms, ${options.workers}x${options.concurrency} workers, lease ${options.leaseMs} ms, seed ${options.seed}, persistence ${persistence ? 'appendfsync always' : 'OFF (control)'}`,
);
const result = await runChaos(options);
console.log(formatCounts(result.counts, result.faultsByKind));
if (result.flows) {
  const f = result.flows;
  console.log(
    `flows: ${f.parents} parents (${f.parents * 4} jobs), completed once ${f.completedOnce}, parent runs ${f.runs}, each after all its children: ${f.violations.length === 0 ? 'yes' : 'NO'}`,
  );
}
console.log(`took ${Math.round(result.durationMs / 1000)} s`);
for (const v of result.violations) console.log(`VIOLATION ${v}`);
console.log(result.ok ? 'chaos: OK' : 'chaos: FAILED');

const clusterRounds = Number(values['cluster-rounds']);
let clusterOk = true;
if (clusterRounds > 0) {
  console.log(`\nchaos on Redis Cluster: ${clusterRounds} master kill(s), one per fresh 3+3 cluster`);
  const cluster = await runFailoverRounds(clusterRounds, (line) => console.log(`[cluster] ${line}`));
  const sum = (f: (r: (typeof cluster.rounds)[number]) => number): number =>
    cluster.rounds.reduce((a, r) => a + f(r), 0);
  console.log(
    `cluster: jobs ${sum((r) => r.jobs)}, master kills ${cluster.rounds.length}, lost ${sum((r) => r.lost.length)}, ` +
      `ran twice ${sum((r) => r.ranTwice.length)}, in two places at once ${sum((r) => r.overlaps.length)}, ` +
      `under another's lease ${sum((r) => r.foreignLeases.length)}`,
  );
  for (const v of cluster.violations) console.log(`VIOLATION ${v}`);
  clusterOk = cluster.violations.length === 0;
  console.log(clusterOk ? 'cluster chaos: OK' : 'cluster chaos: FAILED');
}
process.exit(result.ok && clusterOk ? 0 : 1);
