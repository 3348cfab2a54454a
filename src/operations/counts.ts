/** The `counts` operation (counts.lua): a partition's counts, pause, next due time and due histogram. */
import type { RedisClient } from '../redis/connection.js';
import type { QueueKeys } from '../redis/keys.js';
import { runScript, script } from '../redis/scripts.js';
import { asArray, num } from './reply.js';
import { wheelTail, withBuckets, type Layout } from './wheel.js';

/** How many jobs are in each state; `due` is the part of `scheduled` whose time has come. */
export interface Counts {
  scheduled: number;
  /** Waiting jobs whose due time has come, of every class (default, prioritized, grouped, wheel). */
  due: number;
  /**
   * The part of `due` no worker may start now because of its group: the group is at its
   * concurrency bound (or paused), or waits for its rate limit's next token.
   */
  held: number;
  active: number;
  dead: number;
  /** Completed jobs still kept (bounded by count and age). */
  completed: number;
  /** Cancelled jobs still kept (bounded by count and age). */
  cancelled: number;
  /**
   * Flow parents waiting for their children to complete (queue.addFlow): in none of the other
   * figures, `scheduled` and `due` included, until their last child completed.
   */
  waitingChildren: number;
}

/** How many waiting jobs fall due in each of `slices` slices of `sliceMs` after the server's now. */
export interface HistogramRequest {
  sliceMs: number;
  slices: number;
}

/** One partition's figures (counts.lua): counts, pause, the server's now, the next due time. */
export interface PartitionCounts extends Counts {
  paused: boolean;
  now: number;
  /** The earliest due time of a waiting job; -1: none. */
  nextDue: number;
  /** With a HistogramRequest: jobs due by `now`, then per slice (slice i: due in (now + i·ms, now + (i+1)·ms]). */
  histogram: { overdue: number; counts: number[] } | null;
}

/**
 * Everything counts.lua reads of one partition at one server instant. `groupConcurrency` is the
 * queue's recorded group bound (0 or undefined: none known), which says how many due grouped jobs
 * are held. A wheel queue's buckets are passed as the script names them (withBuckets).
 */
export async function counts(
  client: RedisClient,
  keys: QueueKeys,
  layout: Layout,
  options: { groupConcurrency?: number | undefined; histogram?: HistogramRequest | undefined } = {},
): Promise<PartitionCounts> {
  const { histogram } = options;
  const head = [
    keys.waiting,
    keys.prioWaiting,
    keys.prioReady,
    keys.groupJobs,
    keys.groupsWaiting,
    keys.groupsReady,
    keys.groupCounts,
    keys.leases,
    keys.dead,
    keys.completed,
    keys.cancelled,
    keys.paused,
    keys.flowsWaiting,
  ];
  const args = [options.groupConcurrency ?? 0, histogram?.sliceMs ?? 0, histogram?.slices ?? 0];
  const reply = asArray(
    await withBuckets(layout, [], (starts) => {
      const tail = wheelTail(keys, layout, starts);
      return runScript(client, script('counts'), [...head, ...tail.keys], [...args, ...tail.args]);
    }),
    'counts',
  );
  const slices = histogram ? histogram.slices : 0;
  return {
    scheduled: num(reply, 0, 'counts'),
    due: num(reply, 1, 'counts'),
    held: num(reply, 2, 'counts'),
    active: num(reply, 3, 'counts'),
    dead: num(reply, 4, 'counts'),
    completed: num(reply, 5, 'counts'),
    cancelled: num(reply, 6, 'counts'),
    waitingChildren: num(reply, 7, 'counts'),
    paused: num(reply, 8, 'counts') === 1,
    now: num(reply, 9, 'counts'),
    nextDue: num(reply, 10, 'counts'),
    histogram: histogram
      ? {
          overdue: num(reply, 11, 'counts'),
          counts: Array.from({ length: slices }, (_, i) => num(reply, 12 + i, 'counts')),
        }
      : null,
  };
}
