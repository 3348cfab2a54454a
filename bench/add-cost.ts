/**
 * What bulk add costs, per job, on each side: W1's bulk add alone (chunks of `--chunk` immediate
 * jobs with W1's payload, each addBulk awaited before the next, as the bench adapter does), on a
 * private redis-server, `--runs` times. Prints jobs/s, this process's CPU per job
 * (process.cpuUsage: encoding, ioredis, reply parsing) and Redis's (INFO cpu), so a change to the
 * add path shows which side it moved.
 *
 * Run: node --import tsx bench/add-cost.ts [--jobs=100000] [--chunk=1000] [--runs=3]
 */
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { Queue } from '../src/index.js';
import { countFlag } from './lib/flags.js';
import { cpuMicros, reset, startBenchRedis, type BenchRedis } from './lib/redis.js';
import { runMain } from './lib/main.js';

const JOBS = countFlag('jobs', 100_000);
const CHUNK = countFlag('chunk', 1_000);
const RUNS = countFlag('runs', 3);

async function once(redis: BenchRedis, run: number): Promise<void> {
  await reset(redis.control);
  const queue = new Queue<{ i: number; due: number }>(`add-cost-${run}`, { connection: redis.url });
  // The first add connects, probes and loads the script: not part of the steady rate.
  await queue.addBulk([{ payload: { i: -1, due: Date.now() } }]);
  const redis0 = await cpuMicros(redis.control);
  const node0 = process.cpuUsage();
  const t0 = performance.now();
  for (let first = 0; first < JOBS; first += CHUNK) {
    const now = Date.now();
    const size = Math.min(CHUNK, JOBS - first);
    await queue.addBulk(Array.from({ length: size }, (_, k) => ({ payload: { i: first + k, due: now } })));
  }
  const ms = performance.now() - t0;
  const node = process.cpuUsage(node0);
  const redisCpu = (await cpuMicros(redis.control)) - redis0;
  await queue.close();
  console.log(
    `run ${run}: ${Math.round(JOBS / (ms / 1000))} jobs/s; per job: node CPU ${((node.user + node.system) / JOBS).toFixed(2)} µs ` +
      `(user ${(node.user / JOBS).toFixed(2)}), Redis CPU ${(redisCpu / JOBS).toFixed(2)} µs; load ${loadavg()[0]!.toFixed(2)}`,
  );
}

async function main(): Promise<void> {
  const redis = await startBenchRedis();
  try {
    console.log(`bulk add: ${JOBS} jobs in addBulk chunks of ${CHUNK}, ${RUNS} runs`);
    for (let run = 1; run <= RUNS; run++) await once(redis, run);
  } finally {
    await redis.stop();
  }
}

runMain(main);
