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
import { producerOf } from '../queue/producer.js';
import { totalsAll } from '../queue/reads.js';
import { groupTotals } from '../operations/groups.js';
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
  /**
   * Per-group gauges for the top N groups of each queue by backlog (waiting jobs); every other
   * group is summed under the label group="(other)", so a queue of a million groups adds at most
   * N + 1 series per gauge. 0 turns the per-group gauges off. Default 10.
   */
  groupsTopN?: number;
}

/** The default of MetricsOptions.groupsTopN. */
export const DEFAULT_GROUPS_TOP_N = 10;
/** The group label of the groups outside the top N, summed. */
export const OTHER_GROUPS_LABEL = '(other)';
const MAX_GROUPS_TOP_N = 1000;

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
  private readonly groupsInFlight = new Map<string, Promise<GroupRow[] | undefined>>();

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
    const topN = options.groupsTopN ?? DEFAULT_GROUPS_TOP_N;
    if (!Number.isInteger(topN) || topN < 0 || topN > MAX_GROUPS_TOP_N) {
      throw new ValidationError(
        `groupsTopN must be a whole number from 0 (no per-group gauges) to ${MAX_GROUPS_TOP_N}, got ${String(topN)}`,
        'groupsTopN',
      );
    }
    /** A per-group gauge: the top N groups by backlog of each queue, the rest under (other). */
    const perGroup = (name: string, help: string, pick: (row: GroupRow) => number | undefined): void => {
      new Gauge({
        name: `${p}${name}`,
        help,
        labelNames: ['queue', 'group'] as const,
        registers,
        async collect() {
          this.reset();
          await Promise.all(
            [...metrics.queues.values()].map(async (queue) => {
              const rows = await metrics.groupsOf(queue, topN);
              for (const row of rows ?? []) {
                const value = pick(row);
                if (value !== undefined) this.set({ queue: queue.name, group: row.group }, value);
              }
            }),
          );
        },
      });
    };
    if (topN > 0) {
      perGroup(
        'group_waiting_jobs',
        `Jobs waiting in a group (its backlog): the top groups by backlog, the rest summed as group="${OTHER_GROUPS_LABEL}".`,
        (row) => row.waiting,
      );
      perGroup(
        'group_due_jobs',
        "Of a group's waiting jobs, those due now (top groups by backlog only; the queue's due_jobs holds the total).",
        (row) => row.due,
      );
      perGroup(
        'group_running_jobs',
        `Jobs of a group running now: the top groups by backlog, the rest summed as group="${OTHER_GROUPS_LABEL}".`,
        (row) => row.running,
      );
      perGroup(
        'group_paused',
        '1 while a group is paused (queue.groups.pause), 0 otherwise; top groups by backlog only.',
        (row) => row.paused,
      );
    }
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

  /** The per-group rows of one scrape of `queue` (shared by its gauges); undefined: leave it out. */
  private groupsOf(queue: AnyQueue, topN: number): Promise<GroupRow[] | undefined> {
    const pending = this.groupsInFlight.get(queue.name);
    if (pending) return pending;
    const rows = readGroupRows(queue, topN).finally(() => this.groupsInFlight.delete(queue.name));
    this.groupsInFlight.set(queue.name, rows);
    return rows;
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

/** One label of the per-group gauges: a group, or the rest summed; due undefined for the rest. */
interface GroupRow {
  group: string;
  waiting: number;
  due: number | undefined;
  running: number;
  paused: number | undefined;
}

/**
 * The top `topN` groups of a queue by backlog, and the rest summed as one row (waiting and
 * running from the totals, so no group outside the top is read); undefined for a stand-in that is
 * not a delayq Queue, or during a Redis outage. Cost per scrape: O(log G + N) per partition plus
 * O(running groups), never O(groups).
 */
async function readGroupRows(queue: AnyQueue, topN: number): Promise<GroupRow[] | undefined> {
  let context;
  try {
    context = producerOf(queue).context;
  } catch {
    return undefined;
  }
  try {
    const ctx = context;
    const [top, totals] = await Promise.all([
      (queue as unknown as Queue<never>).groups.list({ limit: topN + 1 }),
      Promise.all(ctx.partitions.map((keys) => groupTotals(ctx.client, keys))),
    ]);
    const shown = top.slice(0, topN);
    const rows: GroupRow[] = shown.map((g) => ({ ...g, paused: g.paused ? 1 : 0 }));
    const waiting = totals.reduce((n, t) => n + t.waiting, 0);
    const running = totals.reduce((n, t) => n + t.running, 0);
    const groups = totals.reduce((n, t) => n + t.groups, 0);
    const restWaiting = waiting - shown.reduce((n, g) => n + g.waiting, 0);
    const restRunning = running - shown.reduce((n, g) => n + g.running, 0);
    if (top.length > topN || groups > shown.length || restRunning > 0) {
      // Due and paused of the rest would mean reading every group: left out.
      rows.push({
        group: OTHER_GROUPS_LABEL,
        waiting: restWaiting,
        due: undefined,
        running: restRunning,
        paused: undefined,
      });
    }
    return rows;
  } catch {
    // A scrape during a Redis outage leaves this queue out rather than failing the scrape.
    return undefined;
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
