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

/**
 * In-memory counts per partition, flushed every `intervalMs` by a PeriodicDuty. Call `start()`
 * once the worker runs and `close()` when it stops (the last counts are flushed then).
 */
export class CounterFlusher {
  private pending = new Map<number, Partial<Record<CounterName, number>>>();
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
    this.add(partition, name, n);
  }

  /**
   * One claimed job's lateness: its start minus its due time, both by the Redis clock (the claim
   * reply's `now − due`). Negative values (never expected) count as 0.
   */
  lateness(ms: number, partition = 0): void {
    this.observe(ms, LATENESS_BOUNDS_MS, LATENESS_NAMES, 'lat:+Inf', 'lat:sum', partition);
  }

  /**
   * One finished attempt's run time: from its start (the claim, Redis clock) to its end, on the
   * worker's estimate of that clock. Flushed with the other counts, so every process's /metrics
   * shows every worker's run times at no cost to the ack. Negative values count as 0.
   */
  runTime(ms: number, partition = 0): void {
    this.observe(ms, RUN_TIME_BOUNDS_MS, RUN_TIME_NAMES, 'run:+Inf', 'run:sum', partition);
  }

  /** Count `ms` in a cumulative histogram: every bucket whose bound it is within, +Inf and the sum. */
  private observe(
    ms: number,
    bounds: readonly number[],
    names: readonly CounterName[],
    all: CounterName,
    sum: CounterName,
    partition: number,
  ): void {
    const value = Math.max(0, Math.round(ms));
    const deltas = this.deltasOf(partition);
    for (let i = 0; i < bounds.length; i++) {
      if (value <= bounds[i]!) {
        const name = names[i]!;
        deltas[name] = (deltas[name] ?? 0) + 1;
      }
    }
    deltas[all] = (deltas[all] ?? 0) + 1;
    deltas[sum] = (deltas[sum] ?? 0) + value;
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
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    const failed: unknown[] = [];
    await Promise.all(
      [...batch].map(async ([partition, deltas]) => {
        try {
          await this.send(partition, deltas);
        } catch (err) {
          for (const [name, n] of Object.entries(deltas) as Array<[CounterName, number]>) {
            this.add(partition, name, n);
          }
          failed.push(err);
        }
      }),
    );
    if (failed.length > 0) throw failed[0];
  }

  private add(partition: number, name: CounterName, n: number): void {
    const deltas = this.deltasOf(partition);
    deltas[name] = (deltas[name] ?? 0) + n;
  }

  private deltasOf(partition: number): Partial<Record<CounterName, number>> {
    let deltas = this.pending.get(partition);
    if (!deltas) this.pending.set(partition, (deltas = {}));
    return deltas;
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
