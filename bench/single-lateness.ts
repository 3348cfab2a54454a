/**
 * W3's second half alone, for quick before/after checks of the worker's wake-up: one job delayed
 * 1 s on an idle queue, N times in a row (default 20), lateness = claimedAt - runAt by the Redis
 * clock. Prints p50/p90/max.
 * Run: node --import tsx bench/single-lateness.ts [N]
 */
import { loadavg } from 'node:os';
import { Queue, Worker } from '../src/index.js';
import { startRedis } from '../src/testing/redis-server.js';

const n = Number(process.argv[2] ?? 20);
const server = await startRedis();
try {
  const queue = new Queue<number>('single', { connection: server.url });
  const late: number[] = [];
  let wake: () => void = () => {};
  const worker = new Worker<number>(
    'single',
    async (job) => {
      late.push(job.claimedAt.getTime() - job.runAt.getTime());
      wake();
    },
    { connection: server.url, logger: { warn: () => {}, error: () => {} } },
  );
  await worker.waitUntilReady();
  for (let i = 0; i < n; i++) {
    const ran = new Promise<void>((resolve) => (wake = resolve));
    await queue.add(i, { delay: 1_000 });
    await ran;
  }
  late.sort((a, b) => a - b);
  const at = (q: number): number => late[Math.min(late.length - 1, Math.floor(q * late.length))]!;
  console.log(
    `single 1 s job x${n}: lateness p50 ${at(0.5)} ms, p90 ${at(0.9)} ms, max ${late[late.length - 1]} ms (load ${loadavg()[0]!.toFixed(2)})`,
  );
  await worker.close();
  await queue.close();
} finally {
  await server.stop();
}
