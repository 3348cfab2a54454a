/**
 * Prometheus metrics for delayq (prom-client): counters of added, completed, failed and dead jobs,
 * histograms of lateness and run time, and gauges of scheduled, active and dead jobs and of whether
 * the queue is paused, read from Redis at scrape time. Feed it Queues and Workers with observeQueue() and observeWorker().
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Counts } from '../operations/inspect.js';
import type { Queue } from '../queue.js';
import type { Worker } from '../worker.js';
import type { Job } from '../job.js';
import { Activity } from './activity.js';

/** Options of DelayqMetrics. */
export interface MetricsOptions {
  /** Registry to register in. Default: a new one (not prom-client's global registry). */
  registry?: Registry;
  /** Prefix of every metric name. Default 'delayq_'. */
  prefix?: string;
  /** Lateness histogram buckets in seconds. */
  latenessBuckets?: number[];
  /** Run-time histogram buckets in seconds. */
  runTimeBuckets?: number[];
}

const LATENESS_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const RUN_TIME_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

// isPaused is optional so a stand-in queue written before pause existed still works (no gauge then).
type AnyQueue = Pick<Queue<never>, 'name' | 'counts' | 'addBulk'> & Partial<Pick<Queue<never>, 'isPaused'>>;

/** The metrics of one process's queues and workers. */
export class DelayqMetrics {
  /** The registry holding delayq's metrics; expose it with `registry.metrics()` or metricsHandler(). */
  readonly registry: Registry;
  /** Per-second activity of observed workers, for the dashboard's charts. */
  readonly activity = new Activity();
  private readonly added: Counter<'queue'>;
  private readonly completed: Counter<'queue'>;
  private readonly failed: Counter<'queue'>;
  private readonly dead: Counter<'queue'>;
  private readonly lateness: Histogram<'queue'>;
  private readonly runTime: Histogram<'queue'>;
  private readonly queues = new Map<string, AnyQueue>();
  private readonly countsInFlight = new Map<string, Promise<Counts>>();

  constructor(options: MetricsOptions = {}) {
    this.registry = options.registry ?? new Registry();
    const p = options.prefix ?? 'delayq_';
    const registers = [this.registry];
    const labelNames = ['queue'] as const;
    this.added = new Counter({
      name: `${p}added_total`,
      help: 'Jobs added (new ids only).',
      labelNames,
      registers,
    });
    this.completed = new Counter({
      name: `${p}completed_total`,
      help: 'Jobs whose handler resolved and whose ack was applied.',
      labelNames,
      registers,
    });
    this.failed = new Counter({
      name: `${p}failed_total`,
      help: 'Failed attempts that were scheduled again (see dead_total for the last one).',
      labelNames,
      registers,
    });
    this.dead = new Counter({
      name: `${p}dead_total`,
      help: 'Jobs moved to the dead set (attempts spent, or unreadable).',
      labelNames,
      registers,
    });
    this.lateness = new Histogram({
      name: `${p}lateness_seconds`,
      help: 'Start of an attempt minus its due time, both by the Redis clock.',
      labelNames,
      buckets: options.latenessBuckets ?? LATENESS_BUCKETS,
      registers,
    });
    this.runTime = new Histogram({
      name: `${p}run_time_seconds`,
      help: 'From the start of an attempt (Redis clock) to its end (this host), for finished attempts.',
      labelNames,
      buckets: options.runTimeBuckets ?? RUN_TIME_BUCKETS,
      registers,
    });
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- prom-client calls collect with the gauge as this
    const metrics = this;
    /** A gauge read from Redis at scrape time, one value per observed queue (undefined: leave it out). */
    const perQueue = (
      name: string,
      help: string,
      read: (queue: AnyQueue) => Promise<number | undefined>,
    ): void => {
      new Gauge({
        name: `${p}${name}`,
        help,
        labelNames,
        registers,
        async collect() {
          this.reset();
          await Promise.all(
            [...metrics.queues.values()].map(async (queue) => {
              try {
                const value = await read(queue);
                if (value !== undefined) this.set({ queue: queue.name }, value);
              } catch {
                // A scrape during a Redis outage leaves this queue out rather than failing the scrape.
              }
            }),
          );
        },
      });
    };
    const counted = (state: 'scheduled' | 'due' | 'active' | 'dead', help: string): void =>
      perQueue(`${state}_jobs`, help, async (queue) => (await metrics.countsOf(queue))[state]);
    counted('scheduled', 'Jobs waiting in the schedule (due or not).');
    counted('due', 'Scheduled jobs whose due time has come but that no worker has claimed yet.');
    counted('active', 'Jobs held by a worker right now.');
    counted('dead', 'Jobs in the dead set.');
    perQueue(
      'queue_paused',
      '1 while the queue is paused (queue.pause(), delayq pause): its workers start no job.',
      async (queue) => (queue.isPaused ? ((await queue.isPaused()) ? 1 : 0) : undefined),
    );
  }

  /**
   * Count this queue's adds and report its scheduled/active/dead gauges. Adds are counted by
   * wrapping this instance's addBulk (add goes through it). Returns a function that stops both.
   */
  observeQueue(queue: AnyQueue): () => void {
    this.queues.set(queue.name, queue);
    const original = queue.addBulk;
    const added = this.added;
    const wrapped: typeof original = async function (this: AnyQueue, jobs) {
      const results = await original.call(this, jobs);
      const created = results.filter((r) => r.created).length;
      if (created > 0) added.inc({ queue: queue.name }, created);
      return results;
    };
    (queue as { addBulk: typeof original }).addBulk = wrapped;
    return () => {
      this.queues.delete(queue.name);
      if (queue.addBulk === wrapped) (queue as { addBulk: typeof original }).addBulk = original;
    };
  }

  /** Count this worker's outcomes and time its jobs. Returns a function that stops listening. */
  observeWorker<T>(worker: Pick<Worker<T>, 'name' | 'on' | 'off'>): () => void {
    const queue = worker.name;
    const onCompleted = (job: Job<T>): void => this.finished(queue, 'completed', job);
    const onFailed = (job: Job<T>): void => this.finished(queue, 'failed', job);
    const onDead = (job: Job<T> | null): void => this.finished(queue, 'dead', job);
    worker.on('completed', onCompleted);
    worker.on('failed', onFailed);
    worker.on('dead', onDead);
    return () => {
      worker.off('completed', onCompleted);
      worker.off('failed', onFailed);
      worker.off('dead', onDead);
    };
  }

  /** Count `n` adds made elsewhere (e.g. by a producer this process does not hold a Queue for). */
  countAdded(queue: string, n = 1): void {
    this.added.inc({ queue }, n);
  }

  /** The exposition text of the registry. */
  metrics(): Promise<string> {
    return this.registry.metrics();
  }

  private finished(
    queue: string,
    outcome: 'completed' | 'failed' | 'dead',
    job: Pick<Job<unknown>, 'runAt' | 'claimedAt'> | null,
  ): void {
    const counter = outcome === 'completed' ? this.completed : outcome === 'failed' ? this.failed : this.dead;
    counter.inc({ queue });
    let latenessMs: number | null = null;
    if (job) {
      latenessMs = Math.max(0, job.claimedAt.getTime() - job.runAt.getTime());
      this.lateness.observe({ queue }, latenessMs / 1000);
      this.runTime.observe({ queue }, Math.max(0, Date.now() - job.claimedAt.getTime()) / 1000);
    }
    this.activity.record(queue, outcome, latenessMs);
  }

  private countsOf(queue: AnyQueue): Promise<Counts> {
    // The gauges of one scrape collect together and share the one read in flight; the next scrape reads afresh.
    const pending = this.countsInFlight.get(queue.name);
    if (pending) return pending;
    const counts = queue.counts().finally(() => this.countsInFlight.delete(queue.name));
    this.countsInFlight.set(queue.name, counts);
    return counts;
  }
}

/**
 * Register delayq's metrics in your own prom-client registry, beside your application's metrics,
 * so one scrape endpoint serves both. Feed the returned DelayqMetrics with observeQueue() and
 * observeWorker(). A registry takes delayq's metrics once per prefix: prom-client refuses a name
 * registered twice.
 */
export function registerMetrics(
  registry: Registry,
  options: Omit<MetricsOptions, 'registry'> = {},
): DelayqMetrics {
  return new DelayqMetrics({ ...options, registry });
}

/** The exposition text of `metrics` and the content type to serve it with. */
export async function exposition(
  metrics: DelayqMetrics | Registry,
): Promise<{ contentType: string; text: string }> {
  const registry = metrics instanceof DelayqMetrics ? metrics.registry : metrics;
  return { contentType: registry.contentType, text: await registry.metrics() };
}

/** A node:http handler answering with the exposition of `metrics` (a DelayqMetrics or any prom-client Registry). */
export function metricsHandler(
  metrics: DelayqMetrics | Registry,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' });
      res.end('method not allowed\n');
      return;
    }
    exposition(metrics).then(
      ({ contentType, text }) => {
        res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-store' });
        res.end(req.method === 'HEAD' ? undefined : text);
      },
      (err: unknown) => {
        res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
        res.end(`metrics failed: ${err instanceof Error ? err.message : String(err)}\n`);
      },
    );
  };
}

/** The same as metricsHandler() for the Fetch API (Hono, Bun.serve, Deno.serve, Next.js route handlers). */
export function metricsFetch(metrics: DelayqMetrics | Registry): (request: Request) => Promise<Response> {
  return async (request) => {
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      return new Response('method not allowed\n', {
        status: 405,
        headers: { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' },
      });
    }
    try {
      const { contentType, text } = await exposition(metrics);
      return new Response(request.method === 'HEAD' ? null : text, {
        headers: { 'content-type': contentType, 'cache-control': 'no-store' },
      });
    } catch (err) {
      return new Response(`metrics failed: ${err instanceof Error ? err.message : String(err)}\n`, {
        status: 500,
        headers: { 'content-type': 'text/plain; charset=utf-8' },
      });
    }
  };
}
