/**
 * A partitioned queue as one claim source: one claim from each due partition with its share of
 * the free slots, all at once (on a Cluster they go to their own masters). Which partitions are
 * due, and their shares, come from the PartitionPicker. A partition whose claim fails is left
 * alone for a while; the jobs the others gave are started all the same.
 */
import type { ServerClock } from '../clock.js';
import type { ClaimedJob, ClaimOutput, UnreadableJob } from '../operations/claim.js';
import type { ClaimSource, ClaimSourceContext } from './claim-source.js';
import { PartitionPicker } from './partition-picker.js';

/** How long a partition whose claim failed is left alone (the loop pauses as long when all fail). */
const PARTITION_ERROR_PAUSE_MS = 1_000;

/** Claims from several partitions, each through its own source. */
export class PartitionedSource implements ClaimSource {
  private readonly picker: PartitionPicker;

  constructor(
    private readonly partitions: readonly ClaimSource[],
    private readonly ctx: Pick<ClaimSourceContext, 'sleeper' | 'maxSleepMs' | 'onError'> & {
      clock: Pick<ServerClock, 'now'>;
    },
  ) {
    this.picker = new PartitionPicker(partitions.length, ctx.maxSleepMs);
  }

  async claim(limit: number, ahead?: boolean): Promise<ClaimOutput> {
    const { picker, ctx } = this;
    const shares = picker.plan(limit, ctx.clock.now());
    const settled = await Promise.allSettled(
      shares.map((share) => this.partitions[share.partition]!.claim(share.limit, ahead)),
    );
    const jobs: ClaimedJob[] = [];
    const unreadable: UnreadableJob[] = [];
    let now = ctx.clock.now();
    // Paused when every partition asked said so (pause writes them all, one by one).
    let paused = shares.length > 0;
    let failure: unknown;
    settled.forEach((result, i) => {
      const share = shares[i]!;
      if (result.status === 'rejected') {
        failure ??= result.reason;
        paused = false;
        picker.failed(share.partition, now, PARTITION_ERROR_PAUSE_MS);
        return;
      }
      const out = result.value;
      now = Math.max(now, out.now);
      jobs.push(...out.jobs);
      unreadable.push(...out.unreadable);
      if (!out.paused) paused = false;
      picker.claimed(share.partition, share.limit, out.jobs.length, out.now, out.nextAt);
    });
    if (failure !== undefined) {
      // All failed: the loop reports it and pauses. Some failed: go on with the others.
      if (settled.every((r) => r.status === 'rejected')) throw toError(failure);
      ctx.onError(toError(failure));
    }
    // The acks each partition's call carried were settled by its exchange.
    return { now, nextAt: picker.nextAt(now), acks: [], jobs, unreadable, paused };
  }

  pause(ms: number, approach?: boolean): Promise<void> {
    return this.ctx.sleeper.sleep(ms, approach);
  }

  woken(partition: number | null, due: number | null): void {
    if (partition === null) this.picker.wokenAll();
    else this.picker.woken(partition, due);
  }

  async start(): Promise<void> {
    await Promise.all(this.partitions.map((p) => p.start()));
  }

  async stop(): Promise<void> {
    await Promise.all(this.partitions.map((p) => p.stop()));
  }
}

function toError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}
