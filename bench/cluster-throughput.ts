/**
 * Throughput of one partitioned queue on 1 vs 3 Redis Cluster masters (issue 7, item 2).
 *
 * For each cluster (a: one cluster-enabled redis-server serving all 16,384 slots; b: 3 masters, no
 * replicas, from test/support/redis-cluster.ts), on loopback: WORKERS worker processes (concurrency
 * CONCURRENCY, no-op handler) wait on a queue with PARTITIONS partitions whose tags cover the three
 * masters of (b) evenly; JOBS jobs are added in bulk, all due at one instant a few seconds ahead;
 * the time from that instant until the queue is empty gives jobs/s. Both runs use the same queue
 * name, so the same jobs land in the same partitions.
 *
 * Run: npm run bench:cluster [-- jobs]   (at least 2 cores free; nothing else running)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { loadavg } from 'node:os';
import { Queue } from '../src/index.js';
import { partitionKeys } from '../src/redis/keys.js';
import { ask, until } from '../test/support/probe.js';
import { startRedisCluster } from '../test/support/redis-cluster.js';
import { startRedis } from '../src/testing/redis-server.js';
import { describeEnvironment } from './lib/machine.js';

const JOBS = Number(process.argv[2] ?? 30_000);
const PARTITIONS = 6;
const WORKERS = 3;
const CONCURRENCY = 32;
/** How far ahead the jobs are due: adding them must be over by then, so it is not measured (0.5 ms a job is ample). */
const DUE_AHEAD_MS = Math.max(5_000, JOBS / 2);

type Seeds = Array<{ host: string; port: number }>;

interface Run {
  masters: number;
  jobsPerSecond: number;
  drainMs: number;
  addMs: number;
}

/** Start WORKERS worker processes and resolve once all print "ready". */
async function startWorkers(seeds: Seeds, queue: string): Promise<ChildProcess[]> {
  const script = fileURLToPath(new URL('./processes/cluster-throughput-worker.ts', import.meta.url));
  const children = Array.from({ length: WORKERS }, () =>
    spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        script,
        JSON.stringify({ seeds, queue, partitions: PARTITIONS, concurrency: CONCURRENCY }),
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    ),
  );
  await Promise.all(
    children.map(
      (child) =>
        new Promise<void>((resolve, reject) => {
          child.once('exit', (code) => reject(new Error(`worker exited with ${code} before ready`)));
          createInterface({ input: child.stdout }).on('line', (line) => {
            if (line === 'ready') resolve();
          });
        }),
    ),
  );
  return children;
}

async function stopWorkers(children: ChildProcess[]): Promise<void> {
  await Promise.all(
    children.map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null) return resolve();
          const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
          child.once('exit', () => {
            clearTimeout(timer);
            resolve();
          });
          child.kill('SIGTERM');
        }),
    ),
  );
}

async function measure(seeds: Seeds, masters: number, name: string): Promise<Run> {
  const queue = new Queue<number>(name, { connection: { cluster: seeds }, partitions: PARTITIONS });
  const workers = await startWorkers(seeds, name);
  console.error(`${masters} master(s): ${WORKERS} workers ready; adding ${JOBS} jobs`);
  try {
    const dueAt = Date.now() + DUE_AHEAD_MS;
    const addStart = performance.now();
    const batch = 5_000;
    for (let i = 0; i < JOBS; i += batch) {
      await queue.addBulk(
        Array.from({ length: Math.min(batch, JOBS - i) }, (_, j) => ({
          payload: i + j,
          opts: { runAt: dueAt },
        })),
      );
    }
    const addMs = performance.now() - addStart;
    if (Date.now() >= dueAt)
      throw new Error(`adding ${JOBS} jobs took ${Math.round(addMs)} ms, past the due time`);
    console.error(`${masters} master(s): added in ${Math.round(addMs)} ms; draining`);
    await new Promise((r) => setTimeout(r, dueAt - Date.now()));
    const start = performance.now();
    for (;;) {
      const c = await queue.counts();
      if (c.scheduled + c.active === 0) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const drainMs = performance.now() - start;
    return {
      masters,
      jobsPerSecond: Math.round(JOBS / (drainMs / 1000)),
      drainMs: Math.round(drainMs),
      addMs: Math.round(addMs),
    };
  } finally {
    await stopWorkers(workers);
    await queue.close();
  }
}

/** A queue name whose partitions the 3-master cluster spreads evenly: PARTITIONS / 3 on each master. */
async function evenName(shardOf: (key: string) => Promise<{ master: { port: number } }>): Promise<string> {
  for (let i = 0; i < 1_000; i++) {
    const name = `bench-${i}`;
    const ports = await Promise.all(
      partitionKeys(name, PARTITIONS).map(async (k) => (await shardOf(k.waiting)).master.port),
    );
    const per = new Map<number, number>();
    for (const port of ports) per.set(port, (per.get(port) ?? 0) + 1);
    if (per.size === 3 && [...per.values()].every((n) => n === PARTITIONS / 3)) return name;
  }
  throw new Error('no evenly spread queue name found');
}

const env = describeEnvironment();
// Other work on the machine skews the figures: say how busy it was when the run began.
const loadAtStart = loadavg()[0]!.toFixed(1);
const runs: Run[] = [];

// (b) first, to pick the queue name from its slot map.
const three = await startRedisCluster({ masters: 3, replicasPerMaster: 0 });
let name: string;
try {
  name = await evenName((key) => three.shardOf(key));
  console.error(`3 masters: queue '${name}'`);
  runs.push(await measure(three.seeds(), 3, name));
} finally {
  await three.stop();
}

// (a) one cluster-enabled node serving every slot. It announces its address: alone, with no peer
// to learn it from, it would report an empty IP in CLUSTER SLOTS and clients could not reach it.
const one = await startRedis({
  args: [
    '--cluster-enabled',
    'yes',
    '--cluster-config-file',
    'nodes.conf',
    '--cluster-announce-ip',
    '127.0.0.1',
  ],
});
try {
  await ask(one.port, (r) => r.call('CLUSTER', 'ADDSLOTSRANGE', '0', '16383'));
  await until(
    () =>
      ask(
        one.port,
        async (r) => ((await r.call('CLUSTER', 'INFO')) as string).includes('cluster_state:ok') || 'not ok',
      ),
    10_000,
    'the one-node cluster to be ok',
  );
  runs.unshift(await measure([{ host: '127.0.0.1', port: one.port }], 1, name));
} finally {
  await one.stop();
}

console.log(`command: npm run bench:cluster -- ${JOBS}`);
console.log(
  `machine: ${env.nproc} cores (${env.cpuModel}), ${env.memoryGiB} GiB, load average ${loadAtStart} at start; node ${env.versions['node']}, redis-server ${env.versions['redis-server']}, ioredis ${env.versions['ioredis']}; delayq ${env.versions['delayq']}`,
);
console.log(
  `workload: one queue, partitions ${PARTITIONS} (${PARTITIONS / 3} per master on 3), ${JOBS} jobs due at one instant, ${WORKERS} worker processes x concurrency ${CONCURRENCY}, no-op handler, loopback, no replicas`,
);
console.log('| masters | jobs/s | drain (ms) | add (ms, not measured in jobs/s) |');
console.log('| ------- | ------ | ---------- | -------------------------------- |');
for (const r of runs)
  console.log(`| ${r.masters} | ${r.jobsPerSecond.toLocaleString('en-US')} | ${r.drainMs} | ${r.addMs} |`);
