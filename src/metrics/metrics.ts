/**
 * Prometheus metrics for delayq (prom-client), read from Redis at scrape time so they are right
 * in any process, whether or not a worker runs in it: the counters of added, claimed, completed,
 * failed, retried, dead, cancelled and reaped jobs and the lateness and run-time histograms come
 * from the queue's counters (stats.lua, docs/ARCHITECTURE.md §7; workers add their lateness and
 * run times once a second);
 * the gauges of scheduled, due, held, waiting-children, active and dead jobs, of the next due
 * time and of whether the queue is paused from its sets (counts.lua, the same read as
 * queue.counts()).
 */
import { assertKnownOptions } from '../option-names.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { ValidationError } from '../errors.js';
import type { Counts } from '../operations/counts.js';
import {
  LATENESS_BOUNDS_MS,
  RUN_TIME_BOUNDS_MS,
  type CounterName,
  type CounterValues,
} from '../operations/stats.js';
import type { Queue } from '../queue.js';
import { producerOf } from '../definition/producer.js';
import { countAll, totalsAll } from '../queue/reads.js';
import { groupTotals } from '../operations/group-totals.js';
import type { Worker } from '../worker.js';

/** Options of DelayqMetrics. */
export interface MetricsOptions {
  /** Registry to register in. Default: a new one (not prom-client's global registry). */
  registry?: Registry;
  /** Prefix of every metric name. Default 'delayq_'. */
  prefix?: string;
  /**
   * Run-time histogram buckets in seconds, chosen among the bounds the counters keep in Redis
   * (0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300: the default, all of
   * them). (Lateness buckets are the counters' own, fixed in Redis.)
   */
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

const METRICS_OPTIONS: ReadonlySet<string> = new Set([
  'registry',
  'prefix',
  'runTimeBuckets',
  'groupsTopN',
  'latenessBuckets',
] satisfies Array<keyof MetricsOptions | 'latenessBuckets'>);
/** The group label of the groups outside the top N, summed. */
export const OTHER_GROUPS_LABEL = '(other)';
const MAX_GROUPS_TOP_N = 1000;

/**
 * What the metrics read of a queue: a delayq Queue (or a stand-in with a name and counts(); its
 * isPaused is optional so one written before pause existed still works, with no gauge then).
 */
export type ObservedQueue = Pick<Queue<never>, 'name' | 'counts'> & Partial<Pick<Queue<never>, 'isPaused'>>;

/** Finds the queues to report at a scrape (observeQueuesOf). */
export type QueueFinder = () => Promise<readonly ObservedQueue[]>;

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
  ['snoozed', 'Attempts a handler ended with a SnoozeError: due again after its delay, not counted.'],
];

/** The metrics of one process's queues and workers. */
export class DelayqMetrics {
  /** The registry holding delayq's metrics; expose it with `registry.metrics()` or metricsHandler(). */
  readonly registry: Registry;
  private readonly queues = new Map<string, ObservedQueue>();
  private readonly finders = new Set<QueueFinder>();
  private foundInFlight: Promise<ObservedQueue[]> | undefined;
  private readonly countsInFlight = new Map<string, Promise<Counts & { nextDue?: number | null }>>();
  private readonly totalsInFlight = new Map<string, Promise<CounterValues | undefined>>();
  private readonly groupsInFlight = new Map<string, Promise<GroupRow[] | undefined>>();

  constructor(options: MetricsOptions = {}) {
    // latenessBuckets, an option of 0.1, gets its own message below: it is known here only to say so.
    assertKnownOptions(options, METRICS_OPTIONS, 'metrics option');
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
    const eachTotals = (visit: (queue: string, totals: CounterValues) => void): Promise<void> =>
      this.eachTotals(visit);
    new CountersHistogram(
      {
        name: `${p}lateness_seconds`,
        help: 'Start of an attempt minus its due time, both by the Redis clock, of every claimed job.',
        counter: 'lat',
        boundsMs: LATENESS_BOUNDS_MS,
      },
      eachTotals,
      registers,
    );
    new CountersHistogram(
      {
        name: `${p}run_time_seconds`,
        help: 'From the start of an attempt to its end (the Redis clock, as its worker estimates it), for every finished attempt of every worker of the queue.',
        counter: 'run',
        boundsMs: runTimeBounds(options.runTimeBuckets),
      },
      eachTotals,
      registers,
    );
    /** A gauge read from Redis at scrape time, one value per observed queue (undefined: leave it out). */
    const perQueue = (
      name: string,
      help: string,
      read: (queue: ObservedQueue) => Promise<number | undefined>,
    ): void => {
      new Gauge({
        name: `${p}${name}`,
        help,
        labelNames,
        registers,
        async collect() {
          this.reset();
          await Promise.all(
            (await metrics.observed()).map(async (queue) => {
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
    const counted = (state: 'scheduled' | 'due' | 'held' | 'active' | 'dead', help: string): void =>
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
            (await metrics.observed()).map(async (queue) => {
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
    counted('scheduled', 'Jobs waiting in the schedule (due or not), of every class.');
    counted(
      'due',
      'Scheduled jobs whose due time has come but that no worker has claimed yet, of every class (held ones included).',
    );
    counted(
      'held',
      "Due grouped jobs their group keeps from starting now: at its concurrency bound, waiting for its rate limit's next token, or paused.",
    );
    perQueue(
      'waiting_children_jobs',
      'Flow parents waiting for their children to complete (queue.addFlow); not in scheduled_jobs until their last child completed.',
      // A stand-in's counts() from before flows has no such figure (undefined at run time, whatever
      // its type says): the gauge leaves it out.
      async (queue): Promise<number | undefined> => (await metrics.countsOf(queue)).waitingChildren,
    );
    counted('active', 'Jobs held by a worker right now.');
    counted('dead', 'Jobs in the dead set.');
    perQueue(
      'next_due_timestamp_seconds',
      'The earliest due time of a waiting job (Unix seconds, Redis clock); absent when nothing waits.',
      async (queue) => {
        const next = (await metrics.countsOf(queue)).nextDue;
        return next === null || next === undefined ? undefined : next / 1000;
      },
    );
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
  observeQueue(queue: ObservedQueue): () => void {
    this.queues.set(queue.name, queue);
    return () => {
      if (this.queues.get(queue.name) === queue) this.queues.delete(queue.name);
    };
  }

  /**
   * Report every queue `find` answers with, asked afresh at each scrape (the metrics of one
   * scrape share one call): for a tool that shows whatever queues exist, including those created
   * after it started (the CLI's dashboard). A queue also given to observeQueue() is reported once.
   * A failing `find` leaves its queues out of that scrape. Returns a function that stops.
   */
  observeQueuesOf(find: QueueFinder): () => void {
    this.finders.add(find);
    return () => {
      this.finders.delete(find);
    };
  }

  /**
   * @deprecated Not needed any more: run times are recorded in the queue's counters in Redis by
   * every worker, and observeQueue() reports them. Kept so existing code works; does nothing.
   * Returns a function that does nothing.
   */
  observeWorker<T>(_worker: Pick<Worker<T>, 'name'>): () => void {
    return () => {};
  }

  /** The exposition text of the registry. */
  metrics(): Promise<string> {
    return this.registry.metrics();
  }

  /** The per-group rows of one scrape of `queue` (shared by its gauges); undefined: leave it out. */
  private groupsOf(queue: ObservedQueue, topN: number): Promise<GroupRow[] | undefined> {
    const pending = this.groupsInFlight.get(queue.name);
    if (pending) return pending;
    const rows = readGroupRows(queue, topN).finally(() => this.groupsInFlight.delete(queue.name));
    this.groupsInFlight.set(queue.name, rows);
    return rows;
  }

  /** The queues of this scrape: those observed, and those the finders answer with now. */
  private async observed(): Promise<ObservedQueue[]> {
    if (this.finders.size === 0) return [...this.queues.values()];
    this.foundInFlight ??= Promise.all(
      [...this.finders].map((find) => find().catch((): readonly ObservedQueue[] => [])),
    )
      .finally(() => {
        this.foundInFlight = undefined;
      })
      .then((found) => found.flat());
    const byName = new Map(this.queues);
    for (const queue of await this.foundInFlight) if (!byName.has(queue.name)) byName.set(queue.name, queue);
    return [...byName.values()];
  }

  private countsOf(queue: ObservedQueue): Promise<Counts & { nextDue?: number | null }> {
    // The gauges of one scrape collect together and share the one read in flight; the next scrape reads afresh.
    const pending = this.countsInFlight.get(queue.name);
    if (pending) return pending;
    const counts = readCounts(queue).finally(() => this.countsInFlight.delete(queue.name));
    this.countsInFlight.set(queue.name, counts);
    return counts;
  }

  /** Call `visit` with the totals of every observed queue that could be read; shared like countsOf. */
  private async eachTotals(visit: (queue: string, totals: CounterValues) => void): Promise<void> {
    await Promise.all(
      (await this.observed()).map(async (queue) => {
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

/** A queue's counts with its next due time (the read queue.counts() makes); a stand-in's counts(). */
function readCounts(queue: ObservedQueue): Promise<Counts & { nextDue?: number | null }> {
  let context;
  try {
    context = producerOf(queue).context;
  } catch {
    return queue.counts();
  }
  return countAll(context);
}

/**
 * The run-time buckets to show, in ms: `seconds` (each one of the bounds the counters keep), or
 * all of those bounds. Cumulative buckets may be left out, so any subset is a true histogram.
 */
function runTimeBounds(seconds: readonly number[] | undefined): readonly number[] {
  if (seconds === undefined) return RUN_TIME_BOUNDS_MS;
  const kept = new Set<number>(RUN_TIME_BOUNDS_MS);
  const ms = seconds.map((s) => Math.round(s * 1000));
  const wrong = seconds.filter((_, i) => !kept.has(ms[i]!));
  if (wrong.length > 0 || seconds.length === 0) {
    throw new ValidationError(
      `runTimeBuckets ${JSON.stringify(seconds)}: each bucket must be one of the bounds the counters keep in Redis (${RUN_TIME_BOUNDS_MS.map((b) => b / 1000).join(', ')}); leave the option out for all of them`,
      'runTimeBuckets',
    );
  }
  return [...new Set(ms)].sort((a, b) => a - b);
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
async function readGroupRows(queue: ObservedQueue, topN: number): Promise<GroupRow[] | undefined> {
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
async function readQueueTotals(queue: ObservedQueue): Promise<CounterValues | undefined> {
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

/** A histogram kept in the counters: cumulative buckets `<counter>:<le ms>`, `:+Inf` and `:sum` (ms). */
interface CountersHistogramSpec {
  name: string;
  help: string;
  counter: 'lat' | 'run';
  boundsMs: readonly number[];
}

/**
 * A histogram whose buckets are counters kept in Redis (cumulative, as Prometheus wants them):
 * prom-client's Histogram only counts what it observed itself, so this one answers get() from the
 * totals instead. The lateness and the run-time histograms are two of these.
 */
class CountersHistogram extends Histogram<'queue'> {
  constructor(
    private readonly spec: CountersHistogramSpec,
    private readonly read: (visit: (queue: string, totals: CounterValues) => void) => Promise<void>,
    registers: Registry[],
  ) {
    super({
      name: spec.name,
      help: spec.help,
      labelNames: ['queue'],
      buckets: spec.boundsMs.map((ms) => ms / 1000),
      registers,
    });
  }

  override async get(): ReturnType<Histogram<'queue'>['get']> {
    const { name, help, counter, boundsMs } = this.spec;
    // Bucket lines carry the `le` label, which the Histogram's own label type does not list.
    const values: Array<{ metricName: string; labels: Record<string, string | number>; value: number }> = [];
    await this.read((queue, totals) => {
      for (const le of boundsMs) {
        values.push({
          metricName: `${name}_bucket`,
          labels: { le: le / 1000, queue },
          value: totals[`${counter}:${le}` as CounterName],
        });
      }
      const count = totals[`${counter}:+Inf`];
      values.push({ metricName: `${name}_bucket`, labels: { le: '+Inf', queue }, value: count });
      values.push({ metricName: `${name}_sum`, labels: { queue }, value: totals[`${counter}:sum`] / 1000 });
      values.push({ metricName: `${name}_count`, labels: { queue }, value: count });
    });
    const metric = { name, help, type: 'histogram', values, aggregator: 'sum' };
    return metric as unknown as Awaited<ReturnType<Histogram<'queue'>['get']>>;
  }

  /** What the registry's text exposition calls (prom-client's Histogram.get() goes through it too). */
  getForPromString(): ReturnType<Histogram<'queue'>['get']> {
    return this.get();
  }
}

/**
 * Register delayq's metrics in your own prom-client registry, beside your application's metrics,
 * so one scrape endpoint serves both. Feed the returned DelayqMetrics with observeQueue() (or
 * observeQueuesOf()). A registry takes delayq's metrics once per prefix: prom-client refuses a name
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
