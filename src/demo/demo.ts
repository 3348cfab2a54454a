/**
 * The demo: schedules jobs with delays, runs them with a Worker, and prints each as it starts with
 * its lateness (start minus due time, both by the Redis clock), then a summary.
 */
import { Queue } from '../queue.js';
import { Worker } from '../worker.js';
import { findOrStartRedis } from '../testing/local-redis.js';

/** Demo settings. */
export interface DemoOptions {
  jobs: number;
  spanMs: number;
  concurrency: number;
  /** Every n-th job fails its first attempt, to show a retry. 0: none fail. */
  failEvery: number;
  out: (line: string) => void;
}

interface Greeting {
  n: number;
  text: string;
}

/** Run the demo to completion; resolves with the lateness of every job in ms. */
export async function runDemo(options: DemoOptions): Promise<number[]> {
  const { out } = options;
  const redis = await findOrStartRedis(out);
  const name = `demo-${process.pid}`;
  const queue = new Queue<Greeting>(name, { connection: redis.url });
  const lateness: number[] = [];
  const worker = new Worker<Greeting>(
    name,
    async (job) => {
      const late = job.claimedAt.getTime() - job.runAt.getTime();
      if (options.failEvery > 0 && job.payload.n % options.failEvery === 0 && job.attempt === 1) {
        out(
          `  job ${pad(job.payload.n)}  due ${clock(job.runAt)}  started ${late} ms late  -> fails on purpose`,
        );
        throw new Error('failing the first attempt on purpose');
      }
      lateness.push(late);
      out(
        `  job ${pad(job.payload.n)}  due ${clock(job.runAt)}  started ${late} ms late  (attempt ${job.attempt}) ${job.payload.text}`,
      );
    },
    { connection: redis.url, concurrency: options.concurrency, backoff: { type: 'fixed', delay: 500 } },
  );
  worker.on('error', (err) => out(`  worker error: ${err.message}`));
  try {
    await worker.waitUntilReady();
    out(`delayq demo on ${redis.url} (claim strategy: ${worker.strategy ?? '?'})`);
    out(`scheduling ${options.jobs} jobs over the next ${(options.spanMs / 1000).toFixed(1)} s...`);
    const results = await queue.addBulk(
      Array.from({ length: options.jobs }, (_, i) => ({
        payload: { n: i + 1, text: `hello #${i + 1}` },
        opts: { delay: Math.round(((i + 1) / options.jobs) * options.spanMs), attempts: 3 },
      })),
    );
    out(`scheduled ${results.length} jobs; the first is due at ${clock(results[0]!.runAt)}`);
    while (lateness.length < options.jobs) {
      await new Promise((r) => setTimeout(r, 50));
    }
    const sorted = [...lateness].sort((a, b) => a - b);
    out(
      `done: ${sorted.length} jobs, lateness p50 ${percentile(sorted, 0.5)} ms, p99 ${percentile(sorted, 0.99)} ms, max ${sorted.at(-1) ?? 0} ms`,
    );
    return lateness;
  } finally {
    await worker.close();
    await queue.close();
    await redis.started?.stop();
  }
}

/** The value at quantile `q` of an ascending array. */
export function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? 0;
}

function pad(n: number): string {
  return String(n).padStart(3, '0');
}

function clock(date: Date): string {
  return date.toISOString().slice(11, 23);
}
