/**
 * What a scrape reads of each observed queue: its counts, its per-group rows and its totals. A
 * stand-in that is not a delayq Queue answers counts() only; a read during a Redis outage leaves
 * the queue out of that scrape rather than failing it.
 */
import type { Counts } from '../operations/counts.js';
import type { CounterValues } from '../operations/stats.js';
import { groupTotals } from '../operations/group-totals.js';
import type { Queue } from '../queue.js';
import { producerOf } from '../definition/producer.js';
import { countAll, totalsAll } from '../queue/reads.js';

/**
 * What the metrics read of a queue: a delayq Queue (or a stand-in with a name and counts(); its
 * isPaused is optional so one written before pause existed still works, with no gauge then).
 */
export type ObservedQueue = Pick<Queue<never>, 'name' | 'counts'> & Partial<Pick<Queue<never>, 'isPaused'>>;

/** The group label of the groups outside the top N, summed. */
export const OTHER_GROUPS_LABEL = '(other)';

/** A delayq Queue's context (its client and keys); undefined for a stand-in that is not one. */
function contextOf(queue: ObservedQueue): ReturnType<typeof producerOf>['context'] | undefined {
  try {
    return producerOf(queue).context;
  } catch {
    return undefined;
  }
}

/** A queue's counts with its next due time (the read queue.counts() makes); a stand-in's counts(). */
export function readCounts(queue: ObservedQueue): Promise<Counts & { nextDue?: number | null }> {
  const context = contextOf(queue);
  return context ? countAll(context) : queue.counts();
}

/** One label of the per-group gauges: a group, or the rest summed; due undefined for the rest. */
export interface GroupRow {
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
export async function readGroupRows(queue: ObservedQueue, topN: number): Promise<GroupRow[] | undefined> {
  const ctx = contextOf(queue);
  if (!ctx) return undefined;
  try {
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
export async function readQueueTotals(queue: ObservedQueue): Promise<CounterValues | undefined> {
  const context = contextOf(queue);
  if (!context) return undefined;
  try {
    return await totalsAll(context);
  } catch {
    // A scrape during a Redis outage leaves this queue out rather than failing the scrape.
    return undefined;
  }
}
