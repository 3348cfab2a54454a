/**
 * Issue 15's pause figure: the lateness of jobs that fall due during a 1 s pause, after the resume.
 * Per strategy: 2 workers (concurrency 10) on an idle queue; pause; 100 jobs due spread over the
 * pause (its 100th to 900th ms); resume once the pause has lasted 1 s by the Redis clock. Reports
 * lateness (claimedAt - runAt, which includes the pause on purpose) and start after the resume
 * (claimedAt - resume time), p50 and max, with the load average.
 * Run: node --import tsx bench/pause-lateness.ts [strategies, default zpopmin,range,wheel]
 */
import { loadavg } from 'node:os';
import { Queue, Worker } from '../src/index.js';
import type { Strategy } from '../src/redis/capabilities.js';
import { startRedis } from '../src/testing/redis-server.js';
import { producerOf } from '../src/definition/producer.js';

const JOBS = 100;
const PAUSE_MS = 1_000;
const strategies = (process.argv[2] ?? 'zpopmin,range,wheel').split(',') as Strategy[];
const quiet = { warn: () => {}, error: () => {} };

const server = await startRedis();
try {
  for (const strategy of strategies) {
    const name = `pause-${strategy}`;
    const options = {
      connection: server.url,
      strategy,
      ...(strategy === 'wheel' && { wheel: { granularityMs: 100 } }),
    };
    const queue = new Queue<number>(name, options);
    const runs: Array<{ runAt: number; claimedAt: number }> = [];
    let done: () => void = () => {};
    const all = new Promise<void>((resolve) => (done = resolve));
    const workers = [0, 1].map(
      () =>
        new Worker<number>(
          name,
          async (job) => {
            runs.push({ runAt: job.runAt.getTime(), claimedAt: job.claimedAt.getTime() });
            if (runs.length === JOBS) done();
          },
          { ...options, concurrency: 10, logger: quiet },
        ),
    );
    await Promise.all(workers.map((w) => w.waitUntilReady()));
    const client = producerOf(queue).context.client;
    const serverNow = async (): Promise<number> => {
      const [s, us] = await client.time();
      return Number(s) * 1000 + Math.floor(Number(us) / 1000);
    };
    await queue.pause();
    const pausedAt = await serverNow();
    await queue.addBulk(
      Array.from({ length: JOBS }, (_, i) => ({
        payload: i,
        opts: { runAt: pausedAt + 100 + Math.floor((i * 800) / JOBS) },
      })),
    );
    // Wait out the pause by the Redis clock (a bench, not a test: a plain timer then a check).
    while ((await serverNow()) < pausedAt + PAUSE_MS) await new Promise((r) => setTimeout(r, 5));
    const resumedAt = await serverNow();
    await queue.resume();
    await all;
    const lateness = runs.map((r) => r.claimedAt - r.runAt).sort((a, b) => a - b);
    const afterResume = runs.map((r) => r.claimedAt - resumedAt).sort((a, b) => a - b);
    const p50 = (xs: number[]): number => xs[Math.floor(xs.length / 2)]!;
    console.log(
      `${strategy.padEnd(7)} ${JOBS} jobs due during a ${resumedAt - pausedAt} ms pause: ` +
        `lateness p50 ${p50(lateness)} ms, min ${lateness[0]} ms, max ${lateness.at(-1)} ms; ` +
        `start after resume p50 ${p50(afterResume)} ms, max ${afterResume.at(-1)} ms ` +
        `(load ${loadavg()
          .map((l) => l.toFixed(2))
          .join(' ')})`,
    );
    await Promise.all(workers.map((w) => w.close()));
    await queue.close();
  }
} finally {
  await server.stop();
}
