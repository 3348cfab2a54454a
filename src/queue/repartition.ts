/**
 * queue.repartition() and queue.repartitionStatus(): grow a running queue's partition count
 * (repartition.lua) and show how far its workers follow (docs/CLUSTER.md, "Re-partitioning a live
 * queue"). Jobs never move; what repartition.lua cannot see from the config record's slot (a
 * paused partition, grouped jobs, repeating schedules) is checked here first.
 */
import type { QueueContext } from '../definition/context.js';
import { RepartitionRefusedError, ValidationError } from '../errors.js';
import { readLiveSettings } from '../operations/config-record.js';
import { repartition } from '../operations/repartition.js';
import { SETTINGS_MESSAGE } from '../redis/wake-subscriber.js';

/** Most partitions a queue may record (config.lua's form of `partitions`). */
const MAX_PARTITIONS = 1024;

/** One partition as repartitionStatus() sees it. */
export interface PartitionStatus {
  partition: number;
  /** Jobs waiting in it (due or not). */
  waiting: number;
  /** Jobs running (leased) from it. */
  running: number;
  /**
   * Workers registered in it (holder numbers not dropped; a crashed worker's until trim drops
   * it): a worker registers in a partition before it claims from it.
   */
  workers: number;
}

/** A queue's partition counts and, per partition, its jobs and the workers claiming from it. */
export interface RepartitionStatus {
  /** The recorded count. */
  partitions: number;
  /** The count a job whose id or group the user chose is placed by (the count before the first re-partition). */
  base: number;
  perPartition: PartitionStatus[];
  /**
   * Whether every worker registered in partition 0 is registered in the last partition too: every
   * running worker claims from every partition. Counts registrations, not processes.
   */
  following: boolean;
}

/** The status of `ctx`'s queue as recorded now (the context follows the recorded count first). */
export async function repartitionStatus(ctx: QueueContext): Promise<RepartitionStatus> {
  await ctx.settle();
  await ctx.adoptLive(await readLiveSettings(ctx.client, ctx.name));
  const client = ctx.client;
  const perPartition = await Promise.all(
    ctx.partitions.map(async (keys, partition) => {
      const [s, p, r, a, holders] = await Promise.all([
        client.zcard(keys.waiting),
        client.zcard(keys.prioWaiting),
        client.zcard(keys.prioReady),
        client.zcard(keys.leases),
        client.hkeys(keys.holders),
      ]);
      // A holder number is a worker; '#' (the counter) and '<n>@' (last seen) are not.
      const workers = holders.filter((field) => /^\d+$/.test(field)).length;
      return { partition, waiting: s + p + r, running: a, workers };
    }),
  );
  const last = perPartition[perPartition.length - 1]!;
  return {
    partitions: ctx.partitions.length,
    base: ctx.partitionsBase,
    perPartition,
    following: last.workers >= perPartition[0]!.workers,
  };
}

/**
 * Grow `ctx`'s queue to `count` partitions: checked, recorded in one step, then every partition's
 * wake channel told (workers read the record again and claim from the new partitions too).
 * Throws ValidationError for a count that is not a whole number 1..1024, RepartitionRefusedError
 * for a smaller count, a paused queue, groups, repeating schedules, flows in progress or the wheel, having written
 * nothing. The same count again is no change.
 */
export async function repartitionQueue(ctx: QueueContext, count: unknown): Promise<RepartitionStatus> {
  if (typeof count !== 'number' || !Number.isInteger(count) || count < 1 || count > MAX_PARTITIONS) {
    throw new ValidationError(
      `repartition takes a whole number of partitions 1..${MAX_PARTITIONS}, got ${String(count)}`,
      'partitions',
    );
  }
  const { record } = await ctx.settle();
  await ctx.adoptLive(await readLiveSettings(ctx.client, ctx.name));
  const client = ctx.client;
  if (count > ctx.partitions.length) {
    const [paused, grouped, limited, schedules, flows] = await Promise.all([
      Promise.all(ctx.partitions.map((keys) => client.exists(keys.paused))),
      Promise.all(ctx.partitions.map((keys) => client.zcard(keys.groupBacklog))),
      Promise.all(ctx.partitions.map((keys) => client.zcard(keys.limiter))),
      client.zcard(ctx.keys.schedules),
      // Flows live only on an unpartitioned queue (addFlow refuses a partitioned one).
      client.exists(ctx.keys.flows),
    ]);
    const refuse = (reason: string): never => {
      throw new RepartitionRefusedError(ctx.name, reason);
    };
    // The new partitions would not be paused: a worker would claim from them at once.
    if (paused.some((n) => n > 0)) refuse('the queue is paused: resume it first');
    if (grouped.some((n) => n > 0) || record.groups)
      refuse('the queue has groups: re-partitioning a queue with groups is not supported');
    // Starts logged by a worker `limit`: that bound is one partition's, so P partitions would
    // allow P times it (an idle limited worker leaves no log; it refuses to follow instead).
    if (limited.some((n) => n > 0))
      refuse('a worker with a rate limit (the option limit) runs on it: stop it first');
    if (schedules > 0) refuse('the queue has repeating schedules, which need an unpartitioned queue');
    if (flows > 0)
      refuse('the queue has flows in progress, which need an unpartitioned queue: let them end first');
  }
  await repartition(client, ctx.name, count);
  await ctx.adoptLive(await readLiveSettings(client, ctx.name));
  // Every partition's channel: a worker opened with any earlier count listens on its first ones.
  await Promise.all(ctx.partitions.map((keys) => client.publish(keys.wake, SETTINGS_MESSAGE)));
  return repartitionStatus(ctx);
}
