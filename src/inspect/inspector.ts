/**
 * The one inspector the CLI and the dashboard look at queues through: it opens a queue by its
 * config record (partitions, layout, codec, payload version) and answers counts, pages of jobs,
 * the next due time, the due histogram and purge for every strategy (zpopmin, range, wheel) and
 * over every partition. No view reads a key itself.
 */
import type { Codec } from '../codec/codec.js';
import { codecNamed } from '../definition/codecs.js';
import { whenReachable } from '../definition/reach.js';
import { CodecUnavailableError, UnknownQueueError } from '../errors.js';
import { settleConfig } from '../operations/config.js';
import type { ConfigRecord } from '../operations/config-record.js';
import { oldestDead } from '../operations/oldest-dead.js';
import type { ListState } from '../operations/list.js';
import { Queue, type JobInfo } from '../queue.js';
import { producerOf } from '../definition/producer.js';
import { activitySeries, growth, latenessBound, type ActivitySecond } from '../metrics/activity.js';
import { countAll, figuresAll, snapshotsAll, type DueHistogram, type QueueCounts } from '../queue/reads.js';
import type { RedisClient } from '../redis/connection.js';

export type { DueHistogram } from '../queue/reads.js';

/** How a tool opens queues. */
export interface InspectorOptions {
  /** Codecs beyond the built-in json and msgpack (protobuf, custom), found by the name they declare. */
  codecs?: readonly Codec[];
  /** How a user gives this tool a codec, for the error naming a codec it lacks. */
  codecHint?: string;
  /**
   * A queue with no config record: 'fail' (default) with UnknownQueueError; 'empty': show it as an
   * empty queue, recording nothing (a dashboard told which queues to show); 'create': open it as a
   * new queue, whose record its first add writes (the CLI's add). Only 'create' ever writes the
   * record; every other view only reads it.
   */
  unknown?: 'fail' | 'empty' | 'create';
}

/**
 * Lateness (start − due, Redis clock) of the jobs claimed in the last minute by every worker, from
 * the counters' lateness histogram, and how long the oldest due job has waited so far.
 */
export interface Lateness {
  claimedLastMinute: number;
  /** Mean lateness, ms; null when nothing was claimed. */
  avgMs: number | null;
  /** Upper bounds (ms) of the histogram buckets holding the median and the 99th percentile. */
  p50Ms: number | null;
  p99Ms: number | null;
  oldestDueWaitingMs: number;
}
/** Dead jobs removed per round of purge. */
const PURGE_BATCH = 500;
const DEFAULT_HINT = "give this tool that codec (the CLI's --codec-module, createDashboard's codec option)";

/** One queue, as a tool sees it. */
export class Inspector {
  private constructor(
    /** The queue, opened with its recorded definition (use it for get, cancel, retry, ...). */
    readonly queue: Queue,
    /** The config record; null for a queue opened with `create` that has none yet. */
    readonly record: ConfigRecord | null,
    /** Null when the recorded codec is available; else the error any encode or decode meets. */
    readonly codecProblem: CodecUnavailableError | null,
  ) {}

  /**
   * Open queue `name` on `client` (left open by close()) by its config record. Throws
   * UnknownQueueError for a queue with no record and no jobs (see `unknown`). A recorded codec
   * this tool lacks does not fail here: counts work, payloads show the error, adds refuse it.
   */
  static async open(client: RedisClient, name: string, options: InspectorOptions = {}): Promise<Inspector> {
    // A server that is not there: one ConnectionError naming it, not ioredis's retries' error.
    await whenReachable(client);
    const found = await settleConfig(client, name, {
      mode: 'read',
      partitions: { wanted: '', initial: '1' },
      layout: { wanted: '', initial: 'zset' },
      codec: { wanted: '', initial: 'json' },
      events: { wanted: '', initial: '0' },
      version: null,
    });
    const unknown = options.unknown ?? 'fail';
    if (!found && unknown === 'fail') throw new UnknownQueueError(name);
    const record = found?.record ?? null;
    let problem: CodecUnavailableError | null = null;
    let codec: Codec | undefined;
    if (record) {
      codec = codecNamed(record.codec, options.codecs ?? []);
      if (!codec) {
        problem = new CodecUnavailableError(name, record.codec, options.codecHint ?? DEFAULT_HINT);
        codec = unavailable(record.codec, problem);
      }
    }
    const queue = new Queue(name, {
      connection: client,
      partitions: record?.partitions ?? 1,
      ...(codec && { codec }),
      ...(record?.version != null && { version: record.version }),
    });
    if (unknown !== 'create') producerOf(queue).context.readOnly();
    return new Inspector(queue, record, problem);
  }

  get name(): string {
    return this.queue.name;
  }

  /** Throws the CodecUnavailableError when this tool cannot encode the queue's jobs. */
  assertCodec(): void {
    if (this.codecProblem) throw this.codecProblem;
  }

  /**
   * Counts over every partition (every class of waiting job; `held`: due grouped jobs their group
   * keeps from starting now), the server's now, and the earliest due time (null: none).
   */
  async counts(): Promise<QueueCounts> {
    return countAll(producerOf(this.queue).context);
  }

  /**
   * The counts and, read with them at the same server instant (per partition), how many waiting
   * jobs fall due in each of `buckets` slices of `bucketMs` after that instant: the figures of
   * `delayq stats` and of the dashboard's queue page.
   */
  figures({ bucketMs = 60_000, buckets = 60 } = {}): Promise<QueueCounts & { histogram: DueHistogram }> {
    return figuresAll(producerOf(this.queue).context, { bucketMs, buckets });
  }

  /** A page of jobs in `state` (see Queue.list). */
  list(state: ListState, page: { offset?: number; limit?: number }): Promise<JobInfo<unknown>[]> {
    return this.queue.list(state, page);
  }

  /** Whether the queue is paused (any partition of it): workers claim nothing until the resume. */
  isPaused(): Promise<boolean> {
    return this.queue.isPaused();
  }

  /** The claim strategy and, for the wheel, its bucket width, as a person reads it. */
  async strategy(): Promise<string> {
    const { strategy, layout } = await producerOf(this.queue).context.settle();
    return layout.kind === 'wheel' ? `wheel (${layout.granularityMs} ms buckets)` : strategy;
  }

  /** The server's Redis version. */
  async redisVersion(): Promise<string> {
    return (await producerOf(this.queue).context.settle()).caps.version;
  }

  /** Lateness of the jobs claimed in the last minute, by the server's `now` (counts() gives it). */
  async lateness(counts: QueueCounts): Promise<Lateness> {
    const { now } = counts;
    const end = Math.floor(now / 1000);
    const grew = growth(await snapshotsAll(producerOf(this.queue).context, end - 60, end));
    const claimed = grew['lat:+Inf'];
    return {
      claimedLastMinute: claimed,
      avgMs: claimed === 0 ? null : Math.round(grew['lat:sum'] / claimed),
      p50Ms: latenessBound(grew, 0.5),
      p99Ms: latenessBound(grew, 0.99),
      oldestDueWaitingMs: counts.due > 0 && counts.nextDue !== null ? Math.max(0, now - counts.nextDue) : 0,
    };
  }

  /**
   * The queue's activity per second over the `seconds` (at most 599) ending at `now` (server clock,
   * as counts() gives it), from the counters' snapshots: what every worker of the queue did,
   * wherever it runs.
   */
  async activity(now: number, seconds = 300): Promise<ActivitySecond[]> {
    const end = Math.floor(now / 1000);
    // One second more than shown, so the first second shown has a snapshot to differ from.
    const snapshots = await snapshotsAll(producerOf(this.queue).context, end - seconds, end);
    return activitySeries(snapshots, end, seconds);
  }

  /** Delete every dead job for good, oldest first; returns how many went. */
  async purgeDead(onProgress?: (removed: number) => void): Promise<number> {
    const context = producerOf(this.queue).context;
    let removed = 0;
    for (const keys of context.partitions) {
      for (;;) {
        // Always the oldest page: what this round removes is gone from the next one.
        const page = await oldestDead(context.client, keys, PURGE_BATCH);
        if (page.length === 0) break;
        const gone = await Promise.all(page.map((id) => this.queue.dead.remove(id)));
        const n = gone.filter(Boolean).length;
        removed += n;
        onProgress?.(removed);
        // Nothing removable on this page (raced with another purge): stop rather than spin.
        if (n === 0) break;
      }
    }
    return removed;
  }

  /** Close the queue (the client stays open: it is the caller's). */
  close(): Promise<void> {
    return this.queue.close();
  }
}

/** A stand-in for a codec this tool lacks: it keeps the recorded name, and refuses every use. */
function unavailable(name: string, problem: CodecUnavailableError): Codec {
  return {
    name,
    encodePayload(): Buffer {
      throw problem;
    },
    decodePayload(): unknown {
      throw problem;
    },
  };
}
