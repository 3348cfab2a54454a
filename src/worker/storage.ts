/**
 * The worker's storage operations, each one script wrapper of src/operations/, sent to the
 * partition the job lives in. The attempt machine, the lease keeper and the reaper are given these
 * functions and hold no keys or queries; acks go through the AckBatcher, so a busy worker pays one
 * round trip for many.
 */
import { ackMany, type AckJob, type AckOutcome, type Retention } from '../operations/ack.js';
import { extend, type ExtendOutput } from '../operations/extend.js';
import { fail, type FailOutput } from '../operations/fail.js';
import { progress } from '../operations/progress.js';
import { reap, type ReapOutput } from '../operations/reap.js';
import { release } from '../operations/release.js';
import { ZSET_LAYOUT, type Layout } from '../operations/wheel.js';
import type { RedisClient } from '../redis/connection.js';
import type { QueueKeys } from '../redis/keys.js';
import { mapByPartition, partitionOf } from '../partition/index.js';
import { AckBatcher } from './ack-batcher.js';
import type { AttemptFail, AttemptProgress, AttemptRelease, AttemptStore } from './attempt.js';
import { PROGRESS_MAX_BYTES } from './progress-value.js';

/** How many expired leases one reap call returns at most, per partition. */
const REAP_LIMIT = 1_000;

/** What the operations need besides the job, fixed for the worker's life. */
export interface StorageOptions {
  keepCompleted: Retention;
  rememberCompleted: Retention;
  deadMaxCount: number;
  deadMaxAgeMs: number;
}

/** One worker's operations on its queue. */
export class WorkerStorage implements AttemptStore {
  /** Where waiting jobs live; settled by the start-up handshake. */
  layout: Layout = ZSET_LAYOUT;
  /** The events stream's cap (0: none); settled at start-up from the server's capabilities. */
  eventsCap = 0;
  private readonly acks: AckBatcher;

  constructor(
    private readonly client: RedisClient,
    /** The keys of each partition (one entry unless `partitions` > 1). */
    private readonly partitions: readonly QueueKeys[],
    private readonly options: StorageOptions,
  ) {
    this.acks = new AckBatcher((jobs) =>
      mapByPartition(
        jobs,
        this.partitions.length,
        (job) => job.id,
        (p, batch) =>
          ackMany(this.client, this.partitions[p]!, {
            jobs: batch,
            keepCompleted: this.options.keepCompleted,
            rememberCompleted: this.options.rememberCompleted,
            eventsCap: this.eventsCap,
          }),
      ),
    );
  }

  ack(job: AckJob): Promise<AckOutcome> {
    return this.acks.ack(job);
  }

  fail(input: AttemptFail): Promise<FailOutput> {
    return fail(this.client, this.keysOf(input.id), {
      ...input,
      member: `${input.token}|${input.id}`,
      deadMaxCount: this.options.deadMaxCount,
      deadMaxAgeMs: this.options.deadMaxAgeMs,
      eventsCap: this.eventsCap,
      layout: this.layout,
    });
  }

  progress(input: AttemptProgress): Promise<void> {
    return progress(this.client, this.keysOf(input.id), {
      ...input,
      member: `${input.token}|${input.id}`,
      capBytes: PROGRESS_MAX_BYTES,
    });
  }

  release(input: AttemptRelease): Promise<boolean> {
    return release(this.client, this.keysOf(input.id), {
      ...input,
      member: `${input.token}|${input.id}`,
      eventsCap: this.eventsCap,
      layout: this.layout,
    });
  }

  /** Extend held leases, one call per partition they live in; deadlines come back in `held`'s order. */
  async extend(ms: number, held: ReadonlyArray<{ id: string; token: string }>): Promise<ExtendOutput> {
    if (this.partitions.length === 1) return extend(this.client, this.partitions[0]!, ms, held);
    let now = 0;
    const deadlines = await mapByPartition(
      held,
      this.partitions.length,
      (lease) => lease.id,
      async (p, batch) => {
        const out = await extend(this.client, this.partitions[p]!, ms, batch);
        now = Math.max(now, out.now);
        return out.deadlines;
      },
    );
    return { now, deadlines };
  }

  /** Reap every partition; the output is the sum, and the earliest deadline left. */
  async reap(): Promise<ReapOutput> {
    const outs = await Promise.all(
      this.partitions.map((keys) =>
        reap(this.client, keys, {
          limit: REAP_LIMIT,
          deadMaxCount: this.options.deadMaxCount,
          deadMaxAgeMs: this.options.deadMaxAgeMs,
          eventsCap: this.eventsCap,
          layout: this.layout,
        }),
      ),
    );
    const deadlines = outs.map((out) => out.nextDeadline).filter((d) => d >= 0);
    return {
      returned: outs.reduce((n, out) => n + out.returned, 0),
      buried: outs.reduce((n, out) => n + out.buried, 0),
      nextDeadline: deadlines.length > 0 ? Math.min(...deadlines) : -1,
    };
  }

  /** The keys of the partition job `id` lives in. */
  private keysOf(id: string): QueueKeys {
    return this.partitions[partitionOf(id, this.partitions.length)]!;
  }
}
