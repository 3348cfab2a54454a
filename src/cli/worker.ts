/**
 * `delayq worker <module>`: load a module that exports handlers per queue and run a Worker for each,
 * printing every outcome; SIGTERM or SIGINT drains (running jobs finish or are handed back) and exits 0.
 *
 * The module exports `handlers` (or a default export): `{ [queue]: handler | { handler, options } }`,
 * and optionally `options`: Worker options for every queue.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Command } from 'commander';
import { startDashboard, type DashboardServer } from '../dashboard/server.js';
import { DelayqMetrics } from '../metrics/metrics.js';
import { Queue } from '../queue.js';
import { assertQueueName } from '../redis/keys.js';
import { Worker, type Handler } from '../worker.js';
import type { WorkerOptions } from '../worker/options.js';
import {
  connect,
  durationArg,
  globalsOf,
  intArg,
  OperationalError,
  output,
  redisUrl,
  UsageError,
} from './context.js';

interface WorkerFlags {
  concurrency?: number;
  queues?: string;
  drainTimeout: number;
  dashboardPort?: number;
}

type Entry = { handler: Handler<unknown>; options: WorkerOptions };

export function registerWorker(program: Command): void {
  program
    .command('worker <module>')
    .description('run Workers for the handlers a module exports per queue; SIGTERM/SIGINT drains and exits 0')
    .option('--concurrency <n>', 'handlers at once per queue (overrides the module)', intArg(1))
    .option('--queues <names>', 'comma-separated: run only these of the module’s queues')
    .option(
      '--drain-timeout <duration>',
      'on shutdown, wait this long for running jobs before handing them back',
      durationArg,
      10_000,
    )
    .option(
      '--dashboard-port <port>',
      'also serve the dashboard with this process’s metrics on 127.0.0.1',
      intArg(0),
    )
    .action(async (modulePath: string, flags: WorkerFlags, command: Command) => {
      const globals = globalsOf(command);
      const out = output(globals);
      const url = redisUrl(globals);
      const entries = await loadHandlers(modulePath, flags);
      // Workers retry Redis forever (they must outlive a restart); check once that it is there at all.
      const probe = await connect(url);
      await probe.quit().catch(() => probe.disconnect());

      const metrics = new DelayqMetrics();
      const workers: Array<Worker<unknown>> = [];
      const emit = (event: string, fields: Record<string, unknown>, text: string): void => {
        if (out.json) out.data({ event, ...fields, at: new Date().toISOString() });
        else out.line(text);
      };
      const { c } = out;
      for (const [queue, entry] of entries) {
        const options: WorkerOptions = { ...entry.options, connection: url };
        if (flags.concurrency !== undefined) options.concurrency = flags.concurrency;
        const worker = new Worker<unknown>(queue, entry.handler, options);
        worker.on('completed', (job) => {
          const late = job.claimedAt.getTime() - job.runAt.getTime();
          const ran = Date.now() - job.claimedAt.getTime();
          emit(
            'completed',
            { queue, id: job.id, attempt: job.attempt, latenessMs: late },
            `${c.green('✓')} ${queue} ${job.id}  attempt ${job.attempt}  ${c.dim(`late ${late} ms, ran ~${ran} ms`)}`,
          );
        });
        worker.on('failed', (job, err, retryAt) => {
          emit(
            'failed',
            { queue, id: job.id, attempt: job.attempt, error: err.message, retryAt: retryAt.toISOString() },
            `${c.yellow('↻')} ${queue} ${job.id}  attempt ${job.attempt} failed: ${err.message}; retry at ${retryAt.toISOString()}`,
          );
        });
        worker.on('dead', (job, err, id) => {
          emit(
            'dead',
            { queue, id, attempt: job?.attempt ?? null, error: err.message },
            `${c.red('✗')} ${queue} ${id}  dead: ${err.message}`,
          );
        });
        worker.on('error', (err) => out.note(`delayq worker ${queue}: ${err.message}`));
        workers.push(worker);
      }
      let shuttingDown: Promise<void> | undefined;
      const stopped = new Promise<void>((resolveStop) => {
        const onSignal = (signal: NodeJS.Signals): void => {
          if (shuttingDown) return;
          emit('draining', { signal }, `${signal}: draining (up to ${flags.drainTimeout} ms)...`);
          shuttingDown = Promise.all(workers.map((w) => w.close({ timeoutMs: flags.drainTimeout }))).then(
            () => {},
          );
          resolveStop();
        };
        process.on('SIGTERM', onSignal);
        process.on('SIGINT', onSignal);
      });
      let dashboard: DashboardServer | null = null;
      // The dashboard's /metrics counters are read from Redis through a Queue per queue.
      const observed: Array<Queue<unknown>> = [];
      try {
        await Promise.all(workers.map((w) => w.waitUntilReady()));
        if (flags.dashboardPort !== undefined) {
          for (const name of entries.keys()) {
            const queue = new Queue<unknown>(name, { connection: url });
            observed.push(queue);
            metrics.observeQueue(queue);
          }
          const token = process.env['DELAYQ_DASHBOARD_TOKEN'];
          dashboard = await startDashboard({
            connection: url,
            port: flags.dashboardPort,
            queues: [...entries.keys()],
            metrics,
            ...(token ? { token } : {}),
          });
        }
      } catch (err) {
        await Promise.all(workers.map((w) => w.close({ timeoutMs: 0 })));
        await Promise.all(observed.map((q) => q.close()));
        throw new OperationalError(`workers did not start: ${(err as Error).message}`);
      }
      const names = [...entries.keys()];
      emit(
        'ready',
        {
          queues: names,
          strategy: workers[0]?.strategy ?? null,
          pid: process.pid,
          dashboard: dashboard?.url ?? null,
        },
        `worker ready: ${names.join(', ')} on ${url} (pid ${process.pid})${dashboard ? `; dashboard ${dashboard.url}` : ''}`,
      );
      await stopped;
      await shuttingDown;
      await dashboard?.close();
      await Promise.all(observed.map((q) => q.close()));
      emit('stopped', {}, 'drained; bye');
    });
}

/** The module's handlers by queue, filtered by --queues; usage errors name what is wrong. */
async function loadHandlers(modulePath: string, flags: WorkerFlags): Promise<Map<string, Entry>> {
  let mod: Record<string, unknown>;
  try {
    mod = (await import(pathToFileURL(resolve(modulePath)).href)) as Record<string, unknown>;
  } catch (err) {
    throw new UsageError(`cannot load ${modulePath}: ${(err as Error).message.split('\n')[0]}`);
  }
  const table: unknown = mod['handlers'] ?? mod['default'];
  if (typeof table !== 'object' || table === null) {
    throw new UsageError(
      `${modulePath} exports no handlers: export const handlers = { queueName: async (job) => {...} }`,
    );
  }
  const shared = (
    typeof mod['options'] === 'object' && mod['options'] !== null ? mod['options'] : {}
  ) as WorkerOptions;
  const wanted = flags.queues
    ?.split(',')
    .map((q) => q.trim())
    .filter(Boolean);
  const entries = new Map<string, Entry>();
  for (const [queue, value] of Object.entries(table)) {
    if (wanted && !wanted.includes(queue)) continue;
    try {
      assertQueueName(queue);
    } catch (err) {
      throw new UsageError(`${modulePath}: ${(err as Error).message}`);
    }
    if (typeof value === 'function')
      entries.set(queue, { handler: value as Handler<unknown>, options: shared });
    else if (typeof value === 'object' && value !== null && typeof (value as Entry).handler === 'function') {
      const v = value as Partial<Entry>;
      entries.set(queue, { handler: v.handler!, options: { ...shared, ...(v.options ?? {}) } });
    } else
      throw new UsageError(
        `${modulePath}: handler for '${queue}' is neither a function nor { handler, options }`,
      );
  }
  for (const q of wanted ?? []) {
    if (!entries.has(q)) throw new UsageError(`${modulePath} has no handler for queue '${q}'`);
  }
  if (entries.size === 0) throw new UsageError(`${modulePath} exports no handlers`);
  return entries;
}
