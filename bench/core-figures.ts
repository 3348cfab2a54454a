/**
 * The core figures of delayq alone, on a private redis-server (no persistence):
 *  - lateness p50/p99/max of 1,000 jobs due uniformly over 5 s (concurrency 50),
 *  - jobs/s for 20,000 immediate jobs at concurrency 50 (one worker, this process),
 *  - Redis commands/s of an idle worker (INFO commandstats delta, counts commands run in scripts).
 * Run: npm run bench:core
 */
import { Redis } from 'ioredis';
import { Queue, Worker } from '../src/index.js';
import { startRedis } from '../src/testing/redis-server.js';
import { percentile } from '../src/demo/demo.js';

const server = await startRedis();
const url = server.url;

async function lateness(): Promise<void> {
  const name = 'lateness';
  const queue = new Queue<number>(name, { connection: url });
  const late: number[] = [];
  const worker = new Worker<number>(
    name,
    async (job) => void late.push(job.claimedAt.getTime() - job.runAt.getTime()),
    {
      connection: url,
      concurrency: 50,
    },
  );
  await worker.waitUntilReady();
  const n = 1_000;
  await queue.addBulk(
    Array.from({ length: n }, (_, i) => ({ payload: i, opts: { delay: 200 + Math.floor((i / n) * 5_000) } })),
  );
  while (late.length < n) await new Promise((r) => setTimeout(r, 20));
  const sorted = late.sort((a, b) => a - b);
  console.log(
    `lateness, ${n} jobs over 5 s, concurrency 50: p50 ${percentile(sorted, 0.5)} ms, p99 ${percentile(sorted, 0.99)} ms, max ${sorted.at(-1)} ms, early ${sorted.filter((x) => x < 0).length}`,
  );
  await worker.close();
  await queue.close();
}

async function throughput(): Promise<void> {
  const name = 'throughput';
  const queue = new Queue<number>(name, { connection: url });
  const n = 20_000;
  const addStart = performance.now();
  await queue.addBulk(Array.from({ length: n }, (_, i) => ({ payload: i })));
  const addMs = performance.now() - addStart;
  let done = 0;
  let finished: () => void = () => {};
  const allDone = new Promise<void>((r) => (finished = r));
  const start = performance.now();
  const worker = new Worker<number>(
    name,
    async () => {
      if (++done === n) finished();
    },
    { connection: url, concurrency: 50 },
  );
  await allDone;
  const ms = performance.now() - start;
  console.log(
    `throughput, ${n} immediate jobs, concurrency 50: ${Math.round(n / (ms / 1000))} jobs/s processed (${Math.round(ms)} ms incl. start-up); addBulk ${Math.round(n / (addMs / 1000))} jobs/s`,
  );
  await worker.close();
  await queue.close();
}

async function idle(): Promise<void> {
  const worker = new Worker('idle', async () => {}, { connection: url });
  await worker.waitUntilReady();
  const r = new Redis(url);
  const calls = async (): Promise<number> => {
    const info = await r.info('commandstats');
    let total = 0;
    for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm))
      if (m[1] !== 'info') total += Number(m[2]);
    return total;
  };
  await new Promise((res) => setTimeout(res, 500));
  const before = await calls();
  const windowMs = 20_000;
  await new Promise((res) => setTimeout(res, windowMs));
  const rate = ((await calls()) - before) / (windowMs / 1000);
  console.log(
    `idle worker: ${rate.toFixed(2)} Redis commands/s over ${windowMs / 1000} s (scripts' inner commands included)`,
  );
  await r.quit();
  await worker.close();
}

try {
  await lateness();
  await throughput();
  await idle();
} finally {
  await server.stop();
}
