/**
 * Prometheus metrics for delayq (prom-client), read from Redis at scrape time so they are right
 * in any process, whether or not a worker runs in it: the counters of added, claimed, completed,
 * failed, retried, dead, cancelled and reaped jobs and the lateness histogram come from the queue's
 * counters (stats.lua, docs/ARCHITECTURE.md §7); the gauges of scheduled, due, active and dead
 * jobs and of whether the queue is paused from its sets. Only the run-time histogram is
 * in-process: it times the attempts of the workers given to observeWorker().
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { ValidationError } from '../errors.js';
import type { Counts } from '../operations/inspect.js';
import { LATENESS_BOUNDS_MS, type CounterName, type CounterValues } from '../operations/stats.js';
import type { Queue } from '../queue.js';
import { producerOf } from '../definition/producer.js';
import { totalsAll } from '../queue/reads.js';
import type { Worker } from '../worker.js';
import type { Job } from '../job.js';

/** Options of DelayqMetrics. */
export interface MetricsOptions {
  /** Registry to register in. Default: a new one (not prom-client's global registry). */
  registry?: Registry;
  /** Prefix of every metric name. Default 'delayq_'. */
  prefix?: string;
  /** Run-time histogram buckets in seconds. (Lateness buckets are the counters' own, fixed in Redis.) */
  runTimeBuckets?: number[];
}

const RUN_TIME_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

// isPaused is optional so a stand-in queue written before pause existed still works (no gauge then).
type AnyQueue = Pick<Queue<never>, 'name' | 'counts'> & Partial<Pick<Queue<never>, 'isPaused'>>;

/** The counters read from Redis, with their help text. */
const COUNTERS: ReadonlyArray<[CounterName, string]> = [
  ['added', 'Jobs added (new ids only), by every producer of the queue.'],
  ['claimed', 'Jobs claimed by a worker (an attempt started); flushed by the workers once a second.'],
  [
    'completed',
    'Jobs whose handler resolved and whose ack was applied; flushed by the workers once a second.',
  ],
  ['failed', 'Failed attempts that were scheduled again (see dead_total for the last one).'],
  ['retried', 'Dead jobs put back to wait (dead.retry).'],
  ['dead', 'Jobs moved to the dead set (attempts spent, unrecoverable, or unreadable).'],
  ['cancelled', 'Jobs cancelled while waiting or running.'],
  ['reaped', 'Leases that expired and were taken back from their worker.'],
];

/** The metrics of one process's queues and workers. */
export class DelayqMetrics {
  /** The registry holding delayq's metrics; expose it with `registry.metrics()` or metricsHandler(). */
  readonly registry: Registry;
  private readonly runTime: Histogram<'queue'>;
  private readonly queues = new Map<string, AnyQueue>();
  private readonly countsInFlight = new Map<string, Promise<Counts>>();
  private readonly totalsInFlight = new Map<string, Promise<CounterValues | undefined>>();

  constructor(options: MetricsOptions = {}) {
    if ('latenessBuckets' in options) {
      throw new ValidationError(
        "latenessBuckets is no longer an option: the lateness histogram is read from the queue's counters in Redis, whose buckets are fixed (1 ms to 5 s); remove it",
        'latenessBuckets',
      );
    }
    this.registry = options.registry ?? new Registry();
    const p = options.prefix ?? 'delayq_';
    const registers = [this.registry];
    const labelNames = ['queue'] as const;
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- prom-client calls collect with the metric as this
    const metrics = this;
    for (const [name, help] of COUNTERS) {
      new Counter({
        name: `${p}${name}_total`,
        help,
        labelNames,
        registers,
        async collect() {
          this.reset();
          await metrics.eachTotals((queue, totals) => this.inc({ queue }, totals[name]));
        },
      });
    }
    new LatenessHistogram(`${p}lateness_seconds`, (visit) => this.eachTotals(visit), registers);
    this.runTime = new Histogram({
      name: `${p}run_time_seconds`,
      help: 'From the start of an attempt (Redis clock) to its end (this host), for finished attempts of observed workers.',
      labelNames,
      buckets: options.runTimeBuckets ?? RUN_TIME_BUCKETS,
      registers,
    });
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
   * Report this queue's counters, lateness histogram and gauges, all read from Redis at each
   * scrape (so they include every producer's and worker's work). Returns a function that stops.
   */
  observeQueue(queue: AnyQueue): () => void {
    this.queues.set(queue.name, queue);
    return () => {
      if (this.queues.get(queue.name) === queue) this.queues.delete(queue.name);
    };
  }

  /** Time this worker's attempts (the run-time histogram). Returns a function that stops listening. */
  observeWorker<T>(worker: Pick<Worker<T>, 'name' | 'on' | 'off'>): () => void {
    const queue = worker.name;
    const onFinished = (job: Job<T> | null): void => {
      if (job) this.runTime.observe({ queue }, Math.max(0, Date.now() - job.claimedAt.getTime()) / 1000);
    };
    worker.on('completed', onFinished);
    worker.on('failed', onFinished);
    worker.on('dead', onFinished);
    return () => {
      worker.off('completed', onFinished);
      worker.off('failed', onFinished);
      worker.off('dead', onFinished);
    };
  }

  /** The exposition text of the registry. */
  metrics(): Promise<string> {
    return this.registry.metrics();
  }

  private countsOf(queue: AnyQueue): Promise<Counts> {
    // The gauges of one scrape collect together and share the one read in flight; the next scrape reads afresh.
    const pending = this.countsInFlight.get(queue.name);
    if (pending) return pending;
    const counts = queue.counts().finally(() => this.countsInFlight.delete(queue.name));
    this.countsInFlight.set(queue.name, counts);
    return counts;
  }

  /** Call `visit` with the totals of every observed queue that could be read; shared like countsOf. */
  private async eachTotals(visit: (queue: string, totals: CounterValues) => void): Promise<void> {
    await Promise.all(
      [...this.queues.values()].map(async (queue) => {
        let pending = this.totalsInFlight.get(queue.name);
        if (!pending) {
          pending = readQueueTotals(queue).finally(() => this.totalsInFlight.delete(queue.name));
          this.totalsInFlight.set(queue.name, pending);
        }
        const totals = await pending;
        if (totals) visit(queue.name, totals);
      }),
    );
  }
}

/** A queue's totals; undefined for a stand-in that is not a delayq Queue, or during a Redis outage. */
async function readQueueTotals(queue: AnyQueue): Promise<CounterValues | undefined> {
  let context;
  try {
    context = producerOf(queue).context;
  } catch {
    return undefined;
  }
  try {
    return await totalsAll(context);
  } catch {
    // A scrape during a Redis outage leaves this queue out rather than failing the scrape.
    return undefined;
  }
}

/**
 * The lateness histogram, whose buckets are the counters `lat:<le>` (cumulative, as Prometheus
 * wants them) kept in Redis: prom-client's Histogram only counts what it observed itself, so this
 * one answers get() from the totals instead.
 */
class LatenessHistogram extends Histogram<'queue'> {
  private static readonly HELP =
    'Start of an attempt minus its due time, both by the Redis clock, of every claimed job.';

  constructor(
    private readonly metricName: string,
    private readonly read: (visit: (queue: string, totals: CounterValues) => void) => Promise<void>,
    registers: Registry[],
  ) {
    super({
      name: metricName,
      help: LatenessHistogram.HELP,
      labelNames: ['queue'],
      buckets: LATENESS_BOUNDS_MS.map((ms) => ms / 1000),
      registers,
    });
  }

  override async get(): ReturnType<Histogram<'queue'>['get']> {
    const name = this.metricName;
    // Bucket lines carry the `le` label, which the Histogram's own label type does not list.
    const values: Array<{ metricName: string; labels: Record<string, string | number>; value: number }> = [];
    await this.read((queue, totals) => {
      for (const le of LATENESS_BOUNDS_MS) {
        values.push({
          metricName: `${name}_bucket`,
          labels: { le: le / 1000, queue },
          value: totals[`lat:${le}`],
        });
      }
      values.push({ metricName: `${name}_bucket`, labels: { le: '+Inf', queue }, value: totals['lat:+Inf'] });
      values.push({ metricName: `${name}_sum`, labels: { queue }, value: totals['lat:sum'] / 1000 });
      values.push({ metricName: `${name}_count`, labels: { queue }, value: totals['lat:+Inf'] });
    });
    const metric = { name, help: LatenessHistogram.HELP, type: 'histogram', values, aggregator: 'sum' };
    return metric as unknown as Awaited<ReturnType<Histogram<'queue'>['get']>>;
  }

  /** What the registry's text exposition calls (prom-client's Histogram.get() goes through it too). */
  getForPromString(): ReturnType<Histogram<'queue'>['get']> {
    return this.get();
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
