/**
 * Which partitions of a partitioned queue a worker claims from, and with how many of its free
 * slots. It keeps, per partition, the server time at which to look next (its next due job or lease
 * deadline, as its last claim said, brought forward by wake-ups), so the claim loop sleeps until the
 * earliest over all partitions and then claims only from the due ones.
 *
 * Fairness: the free slots are shared evenly among the due partitions, and the ones left over (all
 * of them when there are fewer slots than due partitions) go round-robin, starting after the last
 * partition that got one. So a partition with a constant stream of due jobs cannot starve a job due
 * in another: that partition gets a slot within as many claims as there are due partitions.
 */

/** How many slots to offer partition `partition` in the next claim. */
export interface PartitionShare {
  readonly partition: number;
  readonly limit: number;
}

/** Plans claims over `partitions` partitions. */
export class PartitionPicker {
  /** Server time at which each partition must be looked at; -Infinity: now. */
  private readonly nextLook: number[];
  /**
   * The earliest wake-up per partition since its claim was planned: a claim's answer may predate a
   * job added while it was in flight, so it must not erase that job's wake-up (it would then wait
   * for maxSleepMs).
   */
  private readonly wokenSincePlan: number[];
  /** Where the next round-robin of leftover slots starts. */
  private offset = 0;

  constructor(
    private readonly partitions: number,
    /** Longest time a partition goes unlooked at, bounding what a lost wake-up can cost. */
    private readonly maxSleepMs: number,
  ) {
    this.nextLook = Array.from({ length: partitions }, () => -Infinity);
    this.wokenSincePlan = Array.from({ length: partitions }, () => Infinity);
  }

  /** The shares of `free` slots among the partitions due at server time `now` (none when none is due). */
  plan(free: number, now: number): PartitionShare[] {
    const due: number[] = [];
    for (let k = 0; k < this.partitions; k++) {
      const p = (this.offset + k) % this.partitions;
      if (this.nextLook[p]! <= now) due.push(p);
    }
    if (due.length === 0 || free <= 0) return [];
    const even = Math.floor(free / due.length);
    const extra = free % due.length;
    if (extra > 0) this.offset = (due[extra - 1]! + 1) % this.partitions;
    const shares = due
      .map((partition, i) => ({ partition, limit: even + (i < extra ? 1 : 0) }))
      .filter((share) => share.limit > 0);
    for (const share of shares) this.wokenSincePlan[share.partition] = Infinity;
    return shares;
  }

  /**
   * What a claim from `partition` with `limit` slots found: `taken` jobs, the server's `now`, and
   * `nextAt`, when its next job or lease deadline is due (-1: none).
   */
  claimed(partition: number, limit: number, taken: number, now: number, nextAt: number): void {
    // A full claim may have left due jobs behind: look again at once.
    const next = taken >= limit ? -Infinity : nextAt < 0 ? Infinity : nextAt;
    this.nextLook[partition] = Math.min(next, now + this.maxSleepMs, this.wokenSincePlan[partition]!);
    this.wokenSincePlan[partition] = Infinity;
  }

  /** A claim from `partition` failed at server time `now`: try it again after `pauseMs`. */
  failed(partition: number, now: number, pauseMs: number): void {
    this.nextLook[partition] = now + pauseMs;
  }

  /** A wake-up for `partition`: its head is due at `due`, or unknown (null: look at once). */
  woken(partition: number, due: number | null): void {
    const at = due === null ? -Infinity : due;
    this.nextLook[partition] = Math.min(this.nextLook[partition]!, at);
    this.wokenSincePlan[partition] = Math.min(this.wokenSincePlan[partition]!, at);
  }

  /** A wake-up of unknown origin (a reconnect): look at every partition. */
  wokenAll(): void {
    this.nextLook.fill(-Infinity);
  }

  /** The earliest time any partition must be looked at (`now` when one is due already). */
  nextAt(now: number): number {
    return Math.max(now, Math.min(...this.nextLook));
  }
}
