/**
 * Do partitions scale? Shown by accounting, since this machine has too few cores to show it by
 * throughput (docs/CLUSTER.md): for P = 1, 2, 4, 8 partitions on a loopback cluster of P masters
 * (no replicas; each master holds one partition's slot), jobs arrive at a fixed
 * rate (addBulk every 10 ms, each due DELAY_MS later) and WORKERS in-process workers run them with
 * a no-op handler. Around the run, each master's INFO commandstats and used_cpu_sys + used_cpu_user
 * are read; printed per master and in total: Redis CPU and commands per processed job, script calls
 * per job (add, and claim with the acks it carries), each master's share, and the projection for
 * masters on cores of their own. Each run also prints lateness per partition (claimedAt - runAt,
 * Redis clock), and a last run checks fairness with fewer claim slots than partitions.
 *
 * Run: npm run bench:partition-accounting [-- --rate=1000 --seconds=10]
 */
import { loadavg } from 'node:os';
import { Queue, Worker } from '../src/index.js';
import { partitionOf } from '../src/partition/index.js';
import { partitionKeys } from '../src/redis/keys.js';
import { ask } from '../test/support/probe.js';
import { countFlag } from './lib/flags.js';
import { startLoopbackCluster, type LoopbackMaster } from './lib/loopback-cluster.js';
import { describeEnvironment } from './lib/machine.js';
import { quantile } from './lib/stats.js';

const RATE = countFlag('rate', 1_000);
const SECONDS = countFlag('seconds', 10);
const TICK_MS = 10;
const DELAY_MS = 100;
const WORKERS = 2;
const CONCURRENCY = 16;
const SCRIPT_COMMANDS = new Set(['fcall', 'fcall_ro', 'evalsha', 'eval', 'evalsha_ro', 'eval_ro']);

interface Snapshot {
  cpuSeconds: number;
  calls: Map<string, number>;
}

interface Setup {
  partitions: number;
  workers: number;
  concurrency: number;
  handlerMs: number;
  rate: number;
}

interface MasterFigures {
  port: number;
  partitions: number[];
  jobs: number;
  cpuMs: number;
  commands: number;
  scriptCalls: number;
  /** Calls per command name (this bench's INFO left out). */
  byCommand: Map<string, number>;
}

interface RunFigures {
  setup: Setup;
  jobs: number;
  addCalls: number;
  masters: MasterFigures[];
  latenessByPartition: number[][];
}

async function snapshot(port: number): Promise<Snapshot> {
  const [stats, cpu] = await ask(port, async (r) => [await r.info('commandstats'), await r.info('cpu')]);
  const calls = new Map<string, number>();
  for (const m of (stats ?? '').matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls.set(m[1]!, Number(m[2]));
  const field = (name: string): number => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(cpu ?? '')?.[1]);
  return { cpuSeconds: field('used_cpu_sys') + field('used_cpu_user'), calls };
}

async function run(setup: Setup): Promise<RunFigures> {
  const P = setup.partitions;
  // Partition i's slot on master i. Equal contiguous ranges would not spread them: CRC16 is linear,
  // so the slots of `{q#0}` and `{q#1}` differ by the same XOR (4129) for every q, and with two
  // masters split at slot 8192 both partitions of any queue sit on one master (docs/CLUSTER.md).
  const name = `acct-${P}`;
  const cluster = await startLoopbackCluster(
    P,
    partitionKeys(name, P).map((keys) => [keys.waiting]),
  );
  const connection = { cluster: cluster.seeds() };
  const masterOfPartition: LoopbackMaster[] = [];
  await ask(cluster.masters[0]!.port, async (r) => {
    for (const keys of partitionKeys(name, P))
      masterOfPartition.push(cluster.masterOf(Number(await r.call('CLUSTER', 'KEYSLOT', keys.waiting))));
  });
  const queue = new Queue<number>(name, { connection, partitions: P });
  const lateness: number[][] = Array.from({ length: P }, () => []);
  let ran = 0;
  let measuring = false;
  const workers = Array.from({ length: setup.workers }, () => {
    const w = new Worker<number>(
      name,
      async (job) => {
        ran++;
        if (measuring) lateness[partitionOf(job.id, P)]!.push(job.claimedAt.getTime() - job.runAt.getTime());
        if (setup.handlerMs > 0) await new Promise((r) => setTimeout(r, setup.handlerMs));
      },
      { connection, partitions: P, concurrency: setup.concurrency },
    );
    w.on('error', (err) => console.error(`worker: ${err.message}`));
    return w;
  });
  try {
    await Promise.all(workers.map((w) => w.waitUntilReady()));
    // Warm-up: libraries loaded, connections to every master open.
    await queue.addBulk(Array.from({ length: 200 }, (_, i) => ({ payload: i })));
    while (ran < 200) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 300));
    ran = 0;
    measuring = true;

    const before = await Promise.all(cluster.masters.map((m) => snapshot(m.port)));
    const perTick = Math.max(1, Math.round((setup.rate * TICK_MS) / 1_000));
    const ticks = Math.round((SECONDS * 1_000) / TICK_MS);
    const start = performance.now();
    let jobs = 0;
    let addCalls = 0;
    const byPartition = new Array<number>(P).fill(0);
    for (let t = 0; t < ticks; t++) {
      const wait = start + t * TICK_MS - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const added = await queue.addBulk(
        Array.from({ length: perTick }, (_, i) => ({ payload: t * perTick + i, opts: { delay: DELAY_MS } })),
      );
      const hit = new Set(added.map((a) => partitionOf(a.id, P)));
      addCalls += hit.size; // one add call per partition a bulk touches (each well under 200 jobs)
      for (const a of added) byPartition[partitionOf(a.id, P)]!++;
      jobs += added.length;
    }
    while (ran < jobs) await new Promise((r) => setTimeout(r, 20));
    // The last acks ride on the next claims, or go alone after a short wait: let them land.
    await new Promise((r) => setTimeout(r, 1_000));
    const after = await Promise.all(cluster.masters.map((m) => snapshot(m.port)));
    measuring = false;
    const counts = await queue.counts();
    if (counts.completed !== jobs + 200 || counts.active + counts.scheduled + counts.dead !== 0)
      throw new Error(`P=${P}: expected ${jobs + 200} completed, got ${JSON.stringify(counts)}`);

    const masters = cluster.masters.map((m, i): MasterFigures => {
      let commands = 0;
      let scriptCalls = 0;
      const byCommand = new Map<string, number>();
      for (const [cmd, calls] of after[i]!.calls) {
        if (cmd === 'info') continue; // this bench's own reads
        const delta = calls - (before[i]!.calls.get(cmd) ?? 0);
        if (delta > 0) byCommand.set(cmd, delta);
        commands += delta;
        if (SCRIPT_COMMANDS.has(cmd)) scriptCalls += delta;
      }
      const partitions = masterOfPartition.flatMap((mp, p) => (mp.port === m.port ? [p] : []));
      return {
        port: m.port,
        partitions,
        jobs: partitions.reduce((sum, p) => sum + byPartition[p]!, 0),
        cpuMs: (after[i]!.cpuSeconds - before[i]!.cpuSeconds) * 1_000,
        commands,
        scriptCalls,
        byCommand,
      };
    });
    return { setup, jobs, addCalls, masters, latenessByPartition: lateness };
  } finally {
    await Promise.all(workers.map((w) => w.close({ timeoutMs: 2_000 })));
    await queue.close();
    await cluster.stop();
  }
}

const f1 = (n: number): string => n.toFixed(1);
const f2 = (n: number): string => n.toFixed(2);

function report(r: RunFigures, single: RunFigures | undefined): void {
  const { jobs } = r;
  const total = r.masters.reduce(
    (t, m) => ({
      cpuMs: t.cpuMs + m.cpuMs,
      commands: t.commands + m.commands,
      scriptCalls: t.scriptCalls + m.scriptCalls,
    }),
    { cpuMs: 0, commands: 0, scriptCalls: 0 },
  );
  const s = r.setup;
  console.log(
    `\n### P = ${s.partitions}: ${s.partitions} master(s), ${jobs} jobs at ${s.rate}/s, ${s.workers} workers x concurrency ${s.concurrency}, handler ${s.handlerMs} ms\n`,
  );
  console.log(
    '| master | partitions | share of jobs | share of CPU | CPU µs/job | Redis commands/job (in scripts too) | script calls/job |',
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- |');
  for (const m of r.masters) {
    console.log(
      `| ${m.port} | ${m.partitions.join(', ')} | ${f1((100 * m.jobs) / jobs)}% | ${f1((100 * m.cpuMs) / total.cpuMs)}% | ${f1((1_000 * m.cpuMs) / jobs)} | ${f2(m.commands / jobs)} | ${f2(m.scriptCalls / jobs)} |`,
    );
  }
  const busiest = Math.max(...r.masters.map((m) => m.cpuMs));
  // Ceiling with each master on a core of its own: the busiest master at 100% of one core.
  const ceiling = jobs / (busiest / 1_000);
  const singleCeiling = single && single.jobs / (Math.max(...single.masters.map((m) => m.cpuMs)) / 1_000);
  const addPerJob = r.addCalls / jobs;
  const claimPerJob = total.scriptCalls / jobs - addPerJob;
  console.log(
    `| total | ${s.partitions} | 100% | 100% | ${f1((1_000 * total.cpuMs) / jobs)} | ${f2(total.commands / jobs)} | ${f2(total.scriptCalls / jobs)} |`,
  );
  console.log(
    `\nscript calls per job: add ${f2(addPerJob)} (jobs per add call ${f1(1 / addPerJob)}), claim and the rest ${f2(claimPerJob)} (jobs per call ${f1(1 / claimPerJob)}); ` +
      `projected ceiling, masters on own cores: ${Math.round(ceiling).toLocaleString('en-US')} jobs/s${singleCeiling === undefined ? '' : ` (${f2(ceiling / singleCeiling)}x P=1)`}`,
  );
  const byCommand = new Map<string, number>();
  for (const m of r.masters)
    for (const [cmd, n] of m.byCommand) byCommand.set(cmd, (byCommand.get(cmd) ?? 0) + n);
  console.log(
    `commands per job, all masters: ${[...byCommand]
      .sort((a, b) => b[1] - a[1])
      .map(([cmd, n]) => `${cmd} ${f2(n / jobs)}`)
      .join(', ')}`,
  );
  const rows = r.latenessByPartition.map((l, p) => ({
    p,
    n: l.length,
    p50: quantile(l, 0.5),
    p99: quantile(l, 0.99),
    max: quantile(l, 1),
  }));
  console.log(
    `lateness per partition (ms, p50/p99/max): ${rows.map((x) => `#${x.p} ${x.p50}/${x.p99}/${x.max} (${x.n})`).join('; ')}`,
  );
  const p99s = rows.map((x) => x.p99);
  const p50s = rows.map((x) => x.p50);
  console.log(
    `spread between partitions: p50 ${Math.max(...p50s) - Math.min(...p50s)} ms, p99 ${Math.max(...p99s) - Math.min(...p99s)} ms`,
  );
}

const env = describeEnvironment();
console.log(`command: npm run bench:partition-accounting -- --rate=${RATE} --seconds=${SECONDS}`);
console.log(
  `machine: ${env.nproc} cores (${env.cpuModel}), load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(
      ' ',
    )} at start; node ${env.versions['node']}, redis-server ${env.versions['redis-server']}, ioredis ${env.versions['ioredis']}; delayq ${env.versions['delayq']}`,
);
const ownCost = (m: MasterFigures): number => (1_000 * m.cpuMs) / m.jobs;
const summary: string[] = [];
let single: RunFigures | undefined;
for (const partitions of [1, 2, 4, 8]) {
  const r = await run({ partitions, workers: WORKERS, concurrency: CONCURRENCY, handlerMs: 0, rate: RATE });
  single ??= r;
  report(r, single);
  const maxShare = Math.max(...r.masters.map((m) => m.jobs / r.jobs));
  const perOwn = r.masters.map(ownCost);
  let alone = ownCost(r.masters[0]!);
  if (partitions > 1) {
    // The same work one master does here, done by a queue of its own: one partition at rate / P.
    const share = await run({
      partitions: 1,
      workers: WORKERS,
      concurrency: CONCURRENCY,
      handlerMs: 0,
      rate: Math.round(RATE / partitions),
    });
    report(share, undefined);
    alone = ownCost(share.masters[0]!);
  }
  // Masters on cores of their own, each partition fed at RATE (P x RATE in all): each master costs
  // what the P = 1 run cost per job, so the ceiling is P times one master's, less the imbalance.
  const oneCeiling = single.jobs / (single.masters[0]!.cpuMs / 1_000);
  summary.push(
    `| ${partitions} | ${r.masters.map((m) => f1((100 * m.jobs) / r.jobs)).join(' / ')} | ${f1(Math.min(...perOwn))}–${f1(Math.max(...perOwn))} | ${f1(alone)} | ${f1((1_000 * r.masters.reduce((t, m) => t + m.cpuMs, 0)) / r.jobs)} | ${f2(r.masters.reduce((t, m) => t + m.scriptCalls, 0) / r.jobs)} | ${Math.round(r.jobs / (Math.max(...r.masters.map((m) => m.cpuMs)) / 1_000)).toLocaleString('en-US')} | ${Math.round(oneCeiling / maxShare).toLocaleString('en-US')} |`,
  );
}
console.log(`
### Summary at ${RATE} jobs/s
`);
console.log(
  '| P | share of jobs per master (%) | µs CPU per job of its own, per master | one master alone at rate / P | total µs CPU per job | script calls per job | ceiling at these costs (jobs/s) | ceiling, each partition at this rate (jobs/s) |',
);
console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
for (const line of summary) console.log(line);
// Fairness with fewer claim slots than partitions: one worker, 4 slots, a 2 ms handler, 8 partitions.
report(
  await run({ partitions: 8, workers: 1, concurrency: 4, handlerMs: 2, rate: Math.round(RATE / 2) }),
  undefined,
);
console.log(
  `\nload average at end: ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);
