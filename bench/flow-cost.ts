/**
 * What a flow costs Redis, per job: `--flows` flows of one parent and 10 children (queue.addFlow,
 * docs/ARCHITECTURE.md §4.15) against the same number of jobs added as 11 independent jobs each
 * (queue.addBulk), each added and then run to completion by one Worker (concurrency 16), on a
 * private redis-server, `--runs` times alternating the two. Prints per job the commands Redis ran
 * (INFO commandstats: script calls and the commands inside them), the script calls, and Redis's
 * CPU (INFO cpu, user + system), and the commands the flows add by name. Redis CPU swings with
 * the host's load: compare the two lines of one run, not runs of different hosts.
 *
 * Run: npm run bench:flow-cost -- [--flows=200] [--runs=3]
 */
import { Queue, Worker } from '../src/index.js';
import { countFlag } from './lib/flags.js';
import { runMain } from './lib/main.js';
import {
  callsBetween,
  commandCalls,
  cpuMicros,
  reset,
  scriptCallsBetween,
  startBenchRedis,
  type BenchRedis,
} from './lib/redis.js';

const FLOWS = countFlag('flows', 200);
const RUNS = countFlag('runs', 3);
const CHILDREN = 10;

type Shape = 'flow' | 'independent';

interface Figures {
  commands: number;
  scripts: number;
  cpuUs: number;
  calls: Map<string, number>;
}

/** Add FLOWS groups of 1 + CHILDREN jobs of `shape`, run them all, and measure Redis meanwhile. */
async function measure(redis: BenchRedis, shape: Shape, round: number): Promise<Figures> {
  await reset(redis.control);
  const name = `flow-cost-${shape}-${round}`;
  const queue = new Queue<{ n: number }>(name, { connection: redis.url });
  const total = FLOWS * (CHILDREN + 1);
  let done = 0;
  let finished: () => void = () => {};
  const all = new Promise<void>((resolve) => (finished = resolve));
  const worker = new Worker<{ n: number }>(
    name,
    async (job) => {
      if (shape === 'flow' && job.payload.n === -1) return Object.keys(await job.childResults()).length;
      return job.payload.n;
    },
    { connection: redis.url, concurrency: 16 },
  );
  worker.on('completed', () => {
    done += 1;
    if (done === total) finished();
  });
  await worker.waitUntilReady();
  // The queue's first call (its config record, the function library) is not counted.
  await queue.counts();
  const before = await commandCalls(redis.control);
  const cpu0 = await cpuMicros(redis.control);
  for (let f = 0; f < FLOWS; f++) {
    const children = Array.from({ length: CHILDREN }, (_, k) => ({ payload: { n: k } }));
    if (shape === 'flow') await queue.addFlow({ payload: { n: -1 }, children });
    else await queue.addBulk([{ payload: { n: -1 } }, ...children]);
  }
  await all;
  const cpu1 = await cpuMicros(redis.control);
  const after = await commandCalls(redis.control);
  await worker.close();
  await queue.close();
  const calls = new Map<string, number>();
  for (const [cmd, n] of after) calls.set(cmd, n - (before.get(cmd) ?? 0));
  return {
    commands: callsBetween(before, after) / total,
    scripts: scriptCallsBetween(before, after) / total,
    cpuUs: (cpu1 - cpu0) / total,
    calls,
  };
}

async function main(): Promise<void> {
  const redis = await startBenchRedis();
  try {
    console.log(
      `flow-cost: ${FLOWS} x (1 parent + ${CHILDREN} children) as flows vs as independent jobs, ${RUNS} runs (per job)`,
    );
    for (let round = 1; round <= RUNS; round++) {
      const results = new Map<Shape, Figures>();
      // Alternated, so the host's load drifts hit both alike.
      const order: Shape[] = round % 2 === 1 ? ['flow', 'independent'] : ['independent', 'flow'];
      for (const shape of order) results.set(shape, await measure(redis, shape, round));
      for (const shape of ['flow', 'independent'] as const) {
        const r = results.get(shape)!;
        console.log(
          `run ${round} ${shape.padEnd(11)}: ${r.commands.toFixed(2)} commands, ${r.scripts.toFixed(3)} script calls, ${r.cpuUs.toFixed(1)} µs Redis CPU per job`,
        );
      }
      const flow = results.get('flow')!.calls;
      const plain = results.get('independent')!.calls;
      const more = [...flow]
        .map(([cmd, n]) => [cmd, (n - (plain.get(cmd) ?? 0)) / (FLOWS * (CHILDREN + 1))] as const)
        .filter(([cmd, d]) => Math.abs(d) >= 0.05 && cmd !== 'info')
        .sort((a, b) => b[1] - a[1])
        .map(([cmd, d]) => `${cmd} ${d > 0 ? '+' : ''}${d.toFixed(2)}`);
      console.log(`run ${round} flow - independent, per job: ${more.join(', ') || 'none'}`);
    }
  } finally {
    await redis.stop();
  }
}

runMain(main);
