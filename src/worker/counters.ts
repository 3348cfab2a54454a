/**
 * A worker's counts of claimed and completed jobs, of their lateness and run times, kept in memory and added
 * to the queue's counters in Redis (stats.lua) once a second, only when something changed. The hot
 * scripts write no per-job counter or event (docs/ARCHITECTURE.md §7): a SIGKILLed worker loses
 * at most one second of its own counts, never a failure count (those come from the scripts).
 */
import {
  flushCounts,
  LATENESS_BOUNDS_MS,
  RUN_TIME_BOUNDS_MS,
  type CounterName,
} from '../operations/stats.js';
import type { RedisClient } from '../redis/connection.js';
import type { QueueKeys } from '../redis/keys.js';
import { PeriodicDuty } from './duty.js';

/** The counters a worker counts itself; the others are bumped by the scripts of their paths. */
export type WorkerCounter = 'claimed' | 'completed';

/** Sends one partition's deltas to Redis: `flushCounts(client, partitions[partition], deltas)`. */
export type FlushCounts = (
  partition: number,
  deltas: Partial<Record<CounterName, number>>,
) => Promise<unknown>;

/** The counter of each lateness bound, made once rather than for every claimed job. */
const LATENESS_NAMES: readonly CounterName[] = LATENESS_BOUNDS_MS.map((le) => `lat:${le}` as const);
const RUN_TIME_NAMES: readonly CounterName[] = RUN_TIME_BOUNDS_MS.map((le) => `run:${le}` as const);

/** How often the counts go to Redis. */
export const COUNTER_FLUSH_MS = 1_000;

/** One histogram of Redis's counters: its bounds, the counter of each, of +Inf and of the sum. */
interface HistogramNames {
  readonly bounds: readonly number[];
  readonly names: readonly CounterName[];
  readonly all: CounterName;
  readonly sum: CounterName;
}

const LATENESS: HistogramNames = {
  bounds: LATENESS_BOUNDS_MS,
  names: LATENESS_NAMES,
  all: 'lat:+Inf',
  sum: 'lat:sum',
};
const RUN_TIME: HistogramNames = {
  bounds: RUN_TIME_BOUNDS_MS,
  names: RUN_TIME_NAMES,
  all: 'run:+Inf',
  sum: 'run:sum',
};

/**
 * One histogram's counts since the last flush: per bucket (the first bound a value is within; the
 * last slot: beyond every bound), made cumulative and named only at the flush. Counted into the
 * named counters of a dictionary object at each job, a value of 0 ms was ~15 keyed writes.
 */
class Histogram {
  readonly buckets: number[];
  count = 0;
  sum = 0;

  constructor(private readonly of: HistogramNames) {
    this.buckets = new Array<number>(of.bounds.length + 1).fill(0);
  }

  observe(ms: number): void {
    const value = Math.max(0, Math.round(ms));
    const bounds = this.of.bounds;
    let i = 0;
    // Not `value > bound`: a NaN is within no bound, as it was counted before (+Inf and sum only).
    while (i < bounds.length && !(value <= bounds[i]!)) i++;
    this.buckets[i]!++;
    this.count++;
    this.sum += value;
  }

  /** Add this histogram's counters to `deltas`: each bound's cumulative count, +Inf and the sum. */
  addTo(deltas: Partial<Record<CounterName, number>>): void {
    if (this.count === 0) return;
    const { names, all, sum } = this.of;
    let within = 0;
    for (let i = 0; i < names.length; i++) {
      within += this.buckets[i]!;
      if (within > 0) addDelta(deltas, names[i]!, within);
    }
    addDelta(deltas, all, this.count);
    addDelta(deltas, sum, this.sum);
  }
}

function addDelta(deltas: Partial<Record<CounterName, number>>, name: CounterName, n: number): void {
  deltas[name] = (deltas[name] ?? 0) + n;
}

/** One partition's counts since the last flush. */
class PartitionCounts {
  claimed = 0;
  completed = 0;
  readonly lateness = new Histogram(LATENESS);
  readonly runTime = new Histogram(RUN_TIME);
  /** Counts a failed flush did not deliver, sent again with these. */
  readonly carried: Partial<Record<CounterName, number>> = {};

  /** The deltas to send; a counter that counted nothing is left out. */
  deltas(): Partial<Record<CounterName, number>> {
    const deltas: Partial<Record<CounterName, number>> = {};
    if (this.claimed > 0) deltas.claimed = this.claimed;
    this.lateness.addTo(deltas);
    if (this.completed > 0) deltas.completed = this.completed;
    this.runTime.addTo(deltas);
    for (const [name, n] of Object.entries(this.carried) as Array<[CounterName, number]>) {
      addDelta(deltas, name, n);
    }
    return deltas;
  }
}

/**
 * In-memory counts per partition, flushed every `intervalMs` by a PeriodicDuty. Call `start()`
 * once the worker runs and `close()` when it stops (the last counts are flushed then).
 */
export class CounterFlusher {
  /** By partition; a partition that counted nothing since the last flush has none. */
  private pending: Array<PartitionCounts | undefined> = [];
  private readonly duty: PeriodicDuty;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly send: FlushCounts,
    onError: (err: unknown) => void,
    intervalMs = COUNTER_FLUSH_MS,
  ) {
    this.duty = new PeriodicDuty(intervalMs, () => this.flush(), onError);
  }

  /** Count `n` jobs (default 1) of `partition` (default 0) as `name`. */
  count(name: WorkerCounter, n = 1, partition = 0): void {
    if (n <= 0) return;
    const counts = this.countsOf(partition);
    if (name === 'claimed') counts.claimed += n;
    else counts.completed += n;
  }

  /**
   * One claimed job's lateness: its start minus its due time, both by the Redis clock (the claim
   * reply's `now − due`). Negative values (never expected) count as 0.
   */
  lateness(ms: number, partition = 0): void {
    this.countsOf(partition).lateness.observe(ms);
  }

  /**
   * One finished attempt's run time: from its start (the claim, Redis clock) to its end, on the
   * worker's estimate of that clock. Flushed with the other counts, so every process's /metrics
   * shows every worker's run times at no cost to the ack. Negative values count as 0.
   */
  runTime(ms: number, partition = 0): void {
    this.countsOf(partition).runTime.observe(ms);
  }

  /** Start flushing every interval. */
  start(): void {
    this.duty.start();
  }

  /**
   * Send what was counted since the last flush, one call per partition that counted something.
   * Counts a failed call did not deliver are kept for the next flush. Flushes never overlap.
   */
  flush(): Promise<void> {
    // The previous flush's failure was reported to its own caller; this one runs regardless.
    const run = this.flushing.catch(() => undefined).then(() => this.sendPending());
    this.flushing = run;
    return run;
  }

  /** Stop the timer, then flush what is left. */
  async close(): Promise<void> {
    await this.duty.stop();
    await this.flush();
  }

  private async sendPending(): Promise<void> {
    const batch = this.pending;
    if (batch.length === 0) return;
    this.pending = [];
    const failed: unknown[] = [];
    const sends: Array<Promise<void>> = [];
    batch.forEach((counts, partition) => {
      if (!counts) return;
      const deltas = counts.deltas();
      sends.push(
        (async () => {
          try {
            await this.send(partition, deltas);
          } catch (err) {
            const carried = this.countsOf(partition).carried;
            for (const [name, n] of Object.entries(deltas) as Array<[CounterName, number]>) {
              addDelta(carried, name, n);
            }
            failed.push(err);
          }
        })(),
      );
    });
    await Promise.all(sends);
    if (failed.length > 0) throw failed[0];
  }

  private countsOf(partition: number): PartitionCounts {
    return (this.pending[partition] ??= new PartitionCounts());
  }
}

/**
 * The flusher of a worker on `client` over `partitions` (partition i's counts go to partition i's
 * counters): what the Worker creates, starts with its duties and closes after its last ack.
 */
export function counterFlusherFor(
  client: RedisClient,
  partitions: readonly QueueKeys[],
  onError: (err: unknown) => void,
  intervalMs = COUNTER_FLUSH_MS,
): CounterFlusher {
  return new CounterFlusher(
    (partition, deltas) => {
      const keys = partitions[partition];
      if (!keys) throw new RangeError(`counts for partition ${partition} of ${partitions.length}`);
      return flushCounts(client, keys, deltas);
    },
    onError,
    intervalMs,
  );
}
