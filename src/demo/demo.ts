/**
 * The demo: finds or starts a Redis, opens the dashboard, schedules jobs with random delays (some
 * failing once, a few failing until they die), runs them with a Worker and prints each as it starts
 * with its lateness (start minus due time, both by the Redis clock). It runs until stopped, or with
 * `once`, until a fixed batch has finished.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { startDashboard, type DashboardServer } from '../dashboard/server.js';
import { DelayqMetrics } from '../metrics/metrics.js';
import { Queue } from '../queue.js';
import { findOrStartRedis } from '../testing/local-redis.js';
import { Worker } from '../worker.js';
import { percentile } from './stats.js';

export { percentile } from './stats.js';

/**
 * The colours the demo's lines use: the CLI passes its own (src/cli/format.ts), identity functions
 * turn them off. Declared here, so the demo does not reach up into the CLI.
 */
export type DemoColors = Record<'bold' | 'dim' | 'red' | 'green' | 'yellow' | 'cyan', (s: string) => string>;

/** Demo settings. */
export interface DemoOptions {
  /** Schedule `jobs` jobs over `spanMs`, run them, and return; otherwise run waves until `signal` aborts. */
  once: boolean;
  jobs: number;
  spanMs: number;
  concurrency: number;
  /** Every n-th job fails its first attempt, to show a retry. 0: none. */
  failEvery: number;
  /** Every n-th job fails every attempt and lands in the dead set. 0: none. */
  dieEvery: number;
  /** Dashboard port (0: any free one); null: no dashboard. */
  port: number | null;
  /** Pause between waves in continuous mode. */
  waveEveryMs: number;
  /** Stops continuous mode (and cuts a `once` run short). */
  signal?: AbortSignal;
  out: (line: string) => void;
  colors: DemoColors;
}

/** What a demo run did. */
export interface DemoSummary {
  queue: string;
  added: number;
  completed: number;
  retried: number;
  dead: number;
  /** Lateness of every attempt started, in ms. */
  lateness: number[];
  dashboardUrl: string | null;
}

type Fate = 'ok' | 'flaky' | 'doomed';

interface DemoJob {
  n: number;
  kind: string;
  fate: Fate;
  workMs: number;
}

const KINDS = [
  'send-email',
  'resize-image',
  'charge-card',
  'sync-crm',
  'push-notification',
  'nightly-report',
];
const DEFAULT_PORT = 4600;

/** Run the demo; resolves when a `once` run has finished or `signal` aborted, after cleaning up. */
export async function runDemo(options: DemoOptions): Promise<DemoSummary> {
  const { out, colors: c } = options;
  const redis = await findOrStartRedis((line) => out(c.yellow(line)));
  if (redis.started)
    out(`private redis-server started on ${redis.url} (pid ${redis.started.pid}); it stops with the demo`);
  const name = options.once ? `demo-${process.pid}` : 'demo';
  const queue = new Queue<DemoJob>(name, { connection: redis.url });
  const metrics = new DelayqMetrics();
  metrics.observeQueue(queue);
  const summary: DemoSummary = {
    queue: name,
    added: 0,
    completed: 0,
    retried: 0,
    dead: 0,
    lateness: [],
    dashboardUrl: null,
  };
  const tag = (job: { payload: DemoJob }): string =>
    `#${String(job.payload.n).padStart(4, '0')} ${job.payload.kind.padEnd(17)}`;

  const worker = new Worker<DemoJob>(
    name,
    async (job) => {
      const late = Math.max(0, job.claimedAt.getTime() - job.runAt.getTime());
      summary.lateness.push(late);
      const lateText =
        late <= 10
          ? c.green(`${late} ms late`)
          : late <= 100
            ? c.yellow(`${late} ms late`)
            : c.red(`${late} ms late`);
      out(
        `${c.cyan('▶')} ${tag(job)} due ${clock(job.runAt)}  started ${lateText}  ${c.dim(`attempt ${job.attempt}/${job.maxAttempts}`)}`,
      );
      await sleep(job.payload.workMs, undefined, { signal: job.signal });
      if (job.payload.fate === 'doomed') throw new Error('mailbox does not exist (this job always fails)');
      if (job.payload.fate === 'flaky' && job.attempt === 1)
        throw new Error('upstream timed out (fails its first attempt)');
    },
    { connection: redis.url, concurrency: options.concurrency, backoff: { type: 'fixed', delay: 1_000 } },
  );
  metrics.observeWorker(worker);
  worker.on('completed', () => summary.completed++);
  worker.on('failed', (job, err, retryAt) => {
    summary.retried++;
    out(`${c.yellow('↻')} ${tag(job)} ${c.yellow(err.message)}; retry at ${clock(retryAt)}`);
  });
  worker.on('dead', (job, err, id) => {
    summary.dead++;
    out(
      `${c.red('✗')} ${job ? tag(job) : id} ${c.red(`dead after ${job?.attempt ?? '?'} attempts: ${err.message}`)}`,
    );
  });
  worker.on('error', (err) => out(c.red(`worker error: ${err.message}`)));

  let dashboard: DashboardServer | null = null;
  let waves: Promise<void> | null = null;
  const failed: { error?: Error } = {};
  const stop = new AbortController();
  const onAbort = (): void => stop.abort();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    await worker.waitUntilReady();
    if (options.port !== null) {
      dashboard = await openDashboard(redis.url, options.port, metrics, out);
      summary.dashboardUrl = `${dashboard.url}queues/${encodeURIComponent(name)}#token=${dashboardToken}`;
      out(`dashboard: ${c.bold(summary.dashboardUrl)}`);
      out(c.dim(`metrics:   ${dashboard.url}metrics (Authorization: Bearer ${dashboardToken})`));
    }
    out(
      `delayq demo on ${redis.url}, queue '${name}', claim strategy ${worker.strategy ?? '?'}, ${options.concurrency} at a time`,
    );

    let n = 0;
    const addJobs = async (count: number, delayOf: (i: number) => number): Promise<void> => {
      const jobs = Array.from({ length: count }, (_, i) => {
        n++;
        const fate: Fate =
          options.dieEvery > 0 && n % options.dieEvery === 0
            ? 'doomed'
            : options.failEvery > 0 && n % options.failEvery === 0
              ? 'flaky'
              : 'ok';
        return {
          payload: { n, kind: KINDS[n % KINDS.length]!, fate, workMs: 50 + Math.floor(Math.random() * 450) },
          opts: { delay: delayOf(i), attempts: 3 },
        };
      });
      const results = await queue.addBulk(jobs);
      summary.added += results.length;
    };

    if (options.once) {
      out(`scheduling ${options.jobs} jobs over the next ${(options.spanMs / 1000).toFixed(1)} s...`);
      await addJobs(options.jobs, (i) => Math.round(((i + 1) / options.jobs) * options.spanMs));
      while (summary.completed + summary.dead < options.jobs && !stop.signal.aborted) {
        await sleep(50);
      }
    } else {
      out(c.dim('adding a wave of jobs with random delays every few seconds; Ctrl-C stops everything'));
      waves = (async () => {
        let wave = 0;
        while (!stop.signal.aborted) {
          wave++;
          const count = 6 + Math.floor(Math.random() * 9);
          // Mostly within the next 15 s; one per wave later in the hour, so the "due" chart has a shape.
          await addJobs(count, (i) =>
            i === 0
              ? 60_000 + Math.floor(Math.random() * 3_540_000)
              : 300 + Math.floor(Math.random() * 15_000),
          );
          const sorted = [...summary.lateness].sort((a, b) => a - b);
          out(
            c.dim(
              `── wave ${wave}: +${count} jobs │ ${summary.completed} done, ${summary.retried} retried, ${summary.dead} dead │ lateness p50 ${percentile(sorted, 0.5)} ms, p99 ${percentile(sorted, 0.99)} ms`,
            ),
          );
          await sleep(options.waveEveryMs, undefined, { signal: stop.signal }).catch(() => {});
        }
      })().catch((err: unknown) => {
        // Adding failed (Redis gone, ...): say why and stop like Ctrl-C would.
        failed.error = err instanceof Error ? err : new Error(String(err));
        out(c.red(`could not add jobs: ${failed.error.message}`));
        stop.abort();
      });
      await new Promise<void>((resolve) => {
        if (stop.signal.aborted) resolve();
        else stop.signal.addEventListener('abort', () => resolve(), { once: true });
      });
      out('stopping: waiting for running jobs (up to 5 s), then closing the worker, dashboard and queue...');
      await waves;
      if (failed.error) throw failed.error;
    }
    const sorted = [...summary.lateness].sort((a, b) => a - b);
    out(
      `done: ${summary.added} added, ${summary.completed} completed, ${summary.retried} retried, ${summary.dead} dead; ` +
        `lateness p50 ${percentile(sorted, 0.5)} ms, p99 ${percentile(sorted, 0.99)} ms, max ${sorted.at(-1) ?? 0} ms`,
    );
    return summary;
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
    stop.abort();
    await waves?.catch(() => {});
    await worker.close({ timeoutMs: 5_000 });
    await dashboard?.close();
    if (options.once) await clearQueue(queue).catch(() => {});
    await queue.close();
    if (redis.started) {
      await redis.started.stop();
      out('private redis-server stopped');
    }
  }
}

/** A token per demo run, so the dashboard's actions work from the printed link and nowhere else. */
const dashboardToken = randomBytes(18).toString('base64url');

async function openDashboard(
  url: string,
  port: number,
  metrics: DelayqMetrics,
  out: (line: string) => void,
): Promise<DashboardServer> {
  const open = (p: number): Promise<DashboardServer> =>
    startDashboard({ connection: url, host: '127.0.0.1', port: p, token: dashboardToken, metrics });
  try {
    return await open(port);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE' || port !== DEFAULT_PORT) throw err;
    out(`port ${port} is taken; the dashboard takes a free one instead`);
    return open(0);
  }
}

/** Remove what a `once` run leaves behind (its dead jobs), so a shared Redis stays clean. */
async function clearQueue(queue: Queue<DemoJob>): Promise<void> {
  for (;;) {
    const page = await queue.dead.list({ limit: 500 });
    if (page.length === 0) return;
    await Promise.all(page.map((job) => queue.dead.remove(job.id)));
  }
}

function clock(date: Date): string {
  return date.toISOString().slice(11, 23);
}
