/**
 * W7's question at one backlog size, measured in windows: with N jobs waiting a day ahead, add and
 * run 20,000 immediate jobs (one worker, concurrency 50) several times, 15 s apart, printing Redis
 * CPU per job (adds included) and the per-call cost of the batch commands (INFO commandstats), so a
 * cost that grows with N can be told from one that follows the fill. At 10⁷ the records' hash `j`
 * has just grown past 2²³ fields and stays mid-rehash (Redis moves one bucket per operation on a
 * hash value; `DEBUG HTSTATS-KEY` shows both tables): every lookup reads two tables.
 *
 * Run: node --import tsx bench/big-backlog.ts [--waiting=10000000] [--windows=2]
 */
import { Queue, Worker } from '../src/index.js';
import { countFlag } from './lib/flags.js';
import { cpuMicros, startBenchRedis } from './lib/redis.js';
import { runMain } from './lib/main.js';

const WAITING = countFlag('waiting', 10_000_000);
const WINDOWS = countFlag('windows', 2);
const JOBS = 20_000;
const BULK = 1_000;

async function main(): Promise<void> {
  const redis = await startBenchRedis();
  const { control } = redis;
  const queue = new Queue<{ i: number }>('big-backlog', { connection: redis.url });
  let done = 0;
  let target = Infinity;
  let finished: () => void = () => {};
  const worker = new Worker<{ i: number }>('big-backlog', async () => {}, {
    connection: redis.url,
    concurrency: 50,
  });
  worker.on('completed', () => {
    if (++done >= target) finished();
  });
  try {
    const t0 = performance.now();
    for (let i = 0; i < WAITING; i += BULK) {
      const n = Math.min(BULK, WAITING - i);
      await queue.addBulk(
        Array.from({ length: n }, (_, k) => ({ payload: { i: i + k }, opts: { delay: 86_400_000 } })),
      );
    }
    console.log(
      `${WAITING.toLocaleString('en-US')} waiting, filled in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );
    await worker.waitUntilReady();
    for (let w = 0; w < WINDOWS; w++) {
      await control.config('RESETSTAT');
      const cpu0 = await cpuMicros(control);
      const start = performance.now();
      target = done + JOBS;
      const all = new Promise<void>((resolve) => (finished = resolve));
      for (let i = 0; i < JOBS; i += BULK) {
        await queue.addBulk(Array.from({ length: BULK }, (_, k) => ({ payload: { i: -(i + k) } })));
      }
      await all;
      const cpu = ((await cpuMicros(control)) - cpu0) / JOBS;
      const stats = await control.info('commandstats');
      const calls = [...stats.matchAll(/cmdstat_(\w+):calls=(\d+),usec=(\d+),usec_per_call=([\d.]+)/g)]
        .filter((m) => ['zadd', 'zrem', 'hset', 'hmget'].includes(m[1]!))
        .map((m) => `${m[1]} ${Number(m[4]).toFixed(0)} µs per call`);
      console.log(
        `window ${w + 1}: ${JOBS} jobs added and run, ${((JOBS / (performance.now() - start)) * 1000).toFixed(0)} jobs/s, Redis CPU ${cpu.toFixed(1)} µs per job; ${calls.join(', ')}`,
      );
      if (w + 1 < WINDOWS) await new Promise((resolve) => setTimeout(resolve, 15_000));
    }
  } finally {
    await worker.close();
    await queue.close();
    await redis.stop();
  }
}

runMain(main);
