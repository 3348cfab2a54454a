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
import { Counter, Gauge, Registry } from 'prom-client';
import { CountersHistogram } from './counters-histogram.js';
import { ValidationError } from '../errors.js';
import type { Counts } from '../operations/counts.js';
import {
  LATENESS_BOUNDS_MS,
  RUN_TIME_BOUNDS_MS,
  type CounterName,
  type CounterValues,
} from '../operations/stats.js';
import {
  OTHER_GROUPS_LABEL,
  readCounts,
  readGroupRows,
  readQueueTotals,
  type GroupRow,
  type ObservedQueue,
} from './scrape-reads.js';
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
const MAX_GROUPS_TOP_N = 1000;

export type { ObservedQueue } from './scrape-reads.js';
export { OTHER_GROUPS_LABEL } from './scrape-reads.js';

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
